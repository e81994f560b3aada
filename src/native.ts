/**
 * Start-up check of the native add-ons (native-notes.md): uWS, lmdb and
 * fs-native-extensions (the data dir's lock) must load or the service refuses
 * to start with a message saying why;
 * msgpackr without its extractor still works (in pure JS), so that is a
 * warning. Runs before anything imports lmdb, so its failure is ours to report.
 */
import { createRequire } from 'node:module';
import { loadUws, NativeLoadError } from './http/uws.js';
import type { Logger } from './log.js';

export { NativeLoadError };

export async function verifyNativeModules(log: Logger): Promise<void> {
  loadUws();
  try {
    await import('lmdb');
  } catch (err) {
    throw new NativeLoadError(
      `lmdb's native binary did not load (Node ${process.version}, ABI ${process.versions.modules}, ` +
        `${process.platform}/${process.arch}): ${(err as Error).message.split('\n')[0]}\n` +
        `netsot needs the @lmdb/lmdb-${process.platform}-${process.arch} package, glibc >= 2.34 and ` +
        'the C++ runtime of GCC 11 or later (see native-notes.md).',
    );
  }
  try {
    createRequire(import.meta.url)('fs-native-extensions');
  } catch (err) {
    throw new NativeLoadError(
      `fs-native-extensions' native binary did not load (${process.platform}/${process.arch}): ${(err as Error).message.split('\n')[0]}\n` +
        'netsot needs it to lock its data dir (one server per data dir; see native-notes.md).',
    );
  }
  const msgpackr = await import('msgpackr');
  if (!msgpackr.isNativeAccelerationEnabled) {
    log.warn('msgpackr-extract did not load: msgpack decoding runs in pure JavaScript (slower start-up; see native-notes.md)');
  }
}
