/**
 * The log writer thread (log-thread.ts starts it): takes the main thread's
 * records from the ring (log-ring.ts), makes each into its line
 * (log-record.ts) straight into the bytes of the next write, and writes
 * them to stdout through a bounded sink of its own (log-sink.ts: a file with
 * fs.write, a pipe, socket or terminal through a stream on fd 1). It gathers
 * for a moment (LINGER_MS) between takes, so a busy server costs a few dozen
 * writes a second; it is woken early when the ring fills past a quarter or
 * when the main thread asks for a flush. Lines its sink cannot hold are
 * dropped and counted there, and the count is shared with the main thread's
 * metric (netsot_log_dropped_total{thread="main"}).
 */
import { Socket } from 'node:net';
import { isatty, WriteStream } from 'node:tty';
import { parentPort, workerData } from 'node:worker_threads';
import { accessLineBound, formatAccess, linesIn, RECORD_ACCESS, RECORD_HEADER, RECORD_PREFIX, RECORD_TEXT } from './log-record.js';
import { LINGER_MS, RingReader } from './log-ring.js';
import { fdSink } from './log-sink.js';
import type { WriterData, WriterMessage } from './log-thread.js';

const { ring, maxBytes } = workerData as WriterData;
const reader = new RingReader(ring);
const sink = fdSink(1, maxBytes, () => (isatty(1) ? new WriteStream(1) : new Socket({ fd: 1, readable: false, writable: true })));
const { bytes, view } = reader;
/** The loggers' fixed fields, by the id the main thread gave them. */
const prefixes: Buffer[] = [];
const NO_PREFIX = Buffer.alloc(0);

/** Every record in the ring, as lines into the sink (or counted as dropped when it is full). */
function take(): void {
  reader.read((at, size) => {
    const kind = bytes[at + 4];
    if (kind === RECORD_ACCESS) {
      const prefix = prefixes[view.getUint16(at + 6, true)] ?? NO_PREFIX;
      const out = sink.room(accessLineBound(size, prefix.length));
      if (out === null) sink.drop(1);
      else sink.took(formatAccess(bytes, view, at, prefix, out, sink.at));
    } else if (kind === RECORD_TEXT) {
      const text = bytes.subarray(at + RECORD_HEADER, at + size);
      const out = sink.room(text.length);
      if (out === null) sink.drop(linesIn(text));
      else {
        out.set(text, sink.at);
        sink.took(sink.at + text.length);
      }
    } else if (kind === RECORD_PREFIX) prefixes[view.getUint16(at + 6, true)] = Buffer.from(bytes.subarray(at + RECORD_HEADER, at + size));
    return true;
  });
  sink.flush();
  reader.dropped = sink.dropped;
}

/** While idle, the thread still looks this often, so that lines its sink dropped since are counted in the metric. */
const IDLE_MS = 1000;

async function run(): Promise<never> {
  for (;;) {
    const seen = reader.signal();
    take();
    if (reader.empty) {
      await reader.sleep(seen, 'idle', IDLE_MS);
      if (reader.empty) continue;
    }
    if (!reader.flushAsked()) await reader.sleep(reader.signal(), 'linger', LINGER_MS);
  }
}

parentPort!.on('message', (m: WriterMessage) => {
  take();
  void sink.drain(m.drain).then(() => {
    reader.dropped = sink.dropped;
    parentPort!.postMessage('drained');
  });
});
void run();
