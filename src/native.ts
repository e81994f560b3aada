/**
 * Start-up check of the three native add-ons (native-notes.md): uWS and lmdb
 * must load or the service refuses to start with a message saying why;
 * msgpackr without its extractor still works (in pure JS), so that is a
 * warning. Runs before anything imports lmdb, so its failure is ours to report.
 */
import { loadUws, NativeLoadError } from './http/uws.js';
import type { Logger } from './log.js';

export { NativeLoadError };

export async function verifyNativeModules(log: Logger): Promise<void> {
  loadUws();
  try {
    await import('lmdb');
  } catch (err) {
    throw new NativeLoadError(
      `lmdb's native binary did not load (Node ${process.version}, ABI ${process.versions.modules}, ${process.platform}/${process.arch}): ` +
        `${(err as Error).message.split('\n')[0]}\nnetsot needs the @lmdb/lmdb-${process.platform}-${process.arch} package, glibc >= 2.34 and ` +
        'the C++ runtime of GCC 11 or later (see native-notes.md).',
    );
  }
  const msgpackr = await import('msgpackr');
  if (!msgpackr.isNativeAccelerationEnabled) {
    log.warn('msgpackr-extract did not load: msgpack decoding runs in pure JavaScript (slower start-up; see native-notes.md)');
  }
}
