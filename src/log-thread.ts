/**
 * The main thread's log sink when `serve` runs (README, "Logs"): its lines
 * are made into text and written by a thread of their own (log-writer.ts),
 * so the thread that answers requests only copies each line's facts into a
 * ring in shared memory (log-ring.ts). An access line is a compact record of
 * the request's fields (log-record.ts), which costs the main thread a
 * fraction of building the line's text and encoding it (issue 28: the access
 * log must not cost a cached GET a third of its throughput); any other line
 * is its UTF-8 text. When the ring is full the line is dropped and counted,
 * never waited for; the writer thread is bounded in what it holds in turn
 * (LOG_BUFFER_BYTES, log-sink.ts).
 *
 * Should the writer thread fail, lines are written on the main thread again
 * (the sink that `fallback` makes), as a command line tool does.
 */
import type { Worker } from 'node:worker_threads';
import {
  type AccessFields,
  accessLine,
  accessRecordBound,
  encodeAccess,
  encodeText,
  linesIn,
  RECORD_HEADER,
  RECORD_PREFIX,
  RECORD_TEXT,
} from './log-record.js';
import { createRing, RingWriter } from './log-ring.js';
import type { LogSink } from './log-sink.js';
import { ownModule, startWorker } from './own-modules.js';

/** The writer, compiled or source as this module is (own-modules.ts). */
const WRITER_URL = ownModule(import.meta.url, './log-writer');

/** What the writer thread is sent: `drain` asks it to answer `drained` once it wrote everything (or `ms` passed). */
export type WriterMessage = { drain: number };
export interface WriterData {
  ring: SharedArrayBuffer;
  maxBytes: number;
}

export class ThreadedSink implements LogSink {
  private readonly ring: RingWriter;
  private readonly writer: Worker;
  private fallback: LogSink | null = null;
  /** The prefixes defined in the ring, and the last one used (the main thread's logger, nearly always). */
  private readonly prefixes = new Map<string, number>();
  private lastPrefix = '';
  private lastPrefixId = -1;
  private readonly drainWaiters: (() => void)[] = [];

  constructor(
    maxBytes: number,
    private readonly makeFallback: () => LogSink,
  ) {
    const ring = createRing(maxBytes);
    this.ring = new RingWriter(ring);
    this.writer = startWorker(WRITER_URL, { workerData: { ring, maxBytes } satisfies WriterData });
    // It never keeps the process up: at exit, `drain` gives it its time.
    this.writer.unref();
    this.writer.on('message', () => this.drainWaiters.shift()?.());
    this.writer.on('error', (err) => this.writerFailed(err));
    this.writer.on('exit', (code) => this.writerFailed(new Error(`the log writer thread exited with code ${code}`)));
  }

  get dropped(): number {
    return this.ring.dropped + this.ring.droppedByReader + (this.fallback?.dropped ?? 0);
  }

  write(text: string): void {
    if (this.fallback !== null) {
      this.fallback.write(text);
      return;
    }
    const at = this.ring.reserve(RECORD_HEADER + 3 * text.length);
    if (at < 0) this.ring.dropped += linesIn(text);
    else this.ring.commit(encodeText(this.ring.buffer, at, RECORD_TEXT, 0, text));
  }

  access(prefix: string, time: number, a: AccessFields): void {
    if (this.fallback !== null) {
      this.fallback.write(accessLine(prefix, time, a));
      return;
    }
    const id = prefix === this.lastPrefix ? this.lastPrefixId : this.prefixId(prefix);
    const bound = accessRecordBound(a);
    // A field too long for a record, or a logger past the 65,535 a record can name: the line is made here.
    if (bound < 0 || id > 0xffff) {
      this.write(accessLine(prefix, time, a));
      return;
    }
    const at = id < 0 ? -1 : this.ring.reserve(bound);
    if (at < 0) this.ring.dropped++;
    else this.ring.commit(encodeAccess(this.ring.bytes, this.ring.view, at, id, time, a));
  }

  flush(): void {
    if (this.fallback !== null) this.fallback.flush();
    else this.ring.flush();
  }

  drain(ms: number): Promise<void> {
    if (this.fallback !== null) return this.fallback.drain(ms);
    this.ring.flush();
    return new Promise((resolve) => {
      // Held while it drains: the process waits for its answer, or for `ms`.
      this.writer.ref();
      const done = () => {
        clearTimeout(timer);
        this.writer.unref();
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.drainWaiters.indexOf(done);
        if (i >= 0) this.drainWaiters.splice(i, 1);
        done();
      }, ms);
      this.drainWaiters.push(done);
      this.writer.postMessage({ drain: ms } satisfies WriterMessage);
    });
  }

  /** The id of `prefix` in the ring, defining it first; -1 when the ring has no room for its definition now. */
  private prefixId(prefix: string): number {
    let id = this.prefixes.get(prefix);
    if (id === undefined) {
      const at = this.ring.reserve(RECORD_HEADER + 3 * prefix.length);
      if (at < 0) return -1;
      id = this.prefixes.size;
      this.ring.commit(encodeText(this.ring.buffer, at, RECORD_PREFIX, id, prefix));
      this.prefixes.set(prefix, id);
    }
    this.lastPrefix = prefix;
    this.lastPrefixId = id;
    return id;
  }

  private writerFailed(err: Error): void {
    if (this.fallback !== null) return;
    this.fallback = this.makeFallback();
    const msg = `netsot: ${err.message}; writing the log on the main thread`;
    this.fallback.write(`${JSON.stringify({ level: 50, time: Date.now(), pid: process.pid, thread: 'main', event: 'log-writer', msg })}\n`);
    for (const w of this.drainWaiters.splice(0)) w();
  }
}
