/**
 * Where a thread's log lines go (README, "Logs"): never a stall, never a
 * spin. The Logger (log.ts) hands over each line as it is made; the sink
 * gathers them for a moment (`LINGER_MS`, or until it holds `BATCH_BYTES`)
 * and writes them asynchronously, one write at a time, so a busy process
 * makes a few dozen large writes a second rather than one per event-loop
 * turn (each write wakes another thread, which on a loaded machine cost as
 * much as the request it logged). What it holds is bounded (LOG_BUFFER_BYTES): when the
 * output falls behind (a slow pipe reader, a slow disk) or fails (EPIPE: the
 * reader went away; ENOSPC: the disk is full; EAGAIN), lines are dropped and
 * counted (`dropped`, the metric `netsot_log_dropped_total`), never retried
 * in a loop and never waited for by a request. After a failed write the next
 * attempt waits a second, so a full disk costs one failing write a second,
 * and a disk that has room again gets the lines that arrive from then on.
 *
 * - Main thread: stdout (fd 1). A pipe, socket or terminal is written through
 *   Node's stream for it (libuv writes pipes without blocking: a reader that
 *   stops reading fills the bound, not a blocked thread). A file (or
 *   /dev/null) is written with fs.write on libuv's pool: Node writes
 *   process.stdout to a file synchronously, on the main thread, and a full
 *   disk then threw from inside every log call.
 * - Shard workers: their process.stdout, which Node forwards to the main
 *   thread, where the supervisor passes each worker's text on to this sink
 *   (`forwardWorkerOutput`). A worker drops and counts once more than the
 *   bound is waiting there, so a stalled main thread cannot make the workers
 *   grow without limit. Lines stay whole: each write is whole lines.
 */
import { fstatSync, write as fsWrite } from 'node:fs';
import { isatty } from 'node:tty';
import { isMainThread } from 'node:worker_threads';
import { type AccessFields, linesIn } from './log-record.js';
import { ThreadedSink } from './log-thread.js';

export interface LogSink {
  /** Takes whole lines; returns at once, and never throws. */
  write(text: string): void;
  /** Starts writing what it holds now rather than after its moment. */
  flush(): void;
  /** Lines dropped so far because the output fell behind or failed. */
  readonly dropped: number;
  /** Resolves once everything taken is written (or dropped), or after `ms`, whichever comes first. */
  drain(ms: number): Promise<void>;
  /**
   * Takes the access line of `a` logged at `time` by a logger whose fixed fields are `prefix`, made elsewhere
   * (log-thread.ts). A sink without it is given the line's text.
   */
  access?(prefix: string, time: number, a: AccessFields): void;
}

/** How one write reaches the output: `done` gets the error of a failed write. */
type WriteOut = (chunk: Buffer, done: (err: Error | null) => void) => void;

/** After a failed write, the next attempt waits this long. */
const RETRY_AFTER_MS = 1000;
/** How long lines gather before a write, and how much makes a write start at once. */
const LINGER_MS = 20;
const BATCH_BYTES = 256 * 1024;

/**
 * The bounded, asynchronous writer described above, over one output. Lines are encoded straight into buffers of
 * `BATCH_BYTES` as they arrive (no joining of strings later), and each write takes one filled buffer, or the one
 * being filled once its moment has passed.
 */
export class BoundedSink implements LogSink {
  /** Filled buffers, oldest first, and the one being filled (`current`, `used` bytes of it). */
  private readonly filled: Buffer[] = [];
  private current: Buffer | null = null;
  private used = 0;
  /** A written buffer kept for the next fill, so a steady log allocates nothing. */
  private spare: Buffer | null = null;
  /** Bytes taken and not yet written or dropped (LOG_BUFFER_BYTES bounds them). */
  private held = 0;
  private writing = false;
  private pausedUntil = 0;
  private retry: NodeJS.Timeout | null = null;
  private linger: NodeJS.Timeout | null = null;
  private waiters: (() => void)[] = [];
  dropped = 0;

  constructor(
    private readonly out: WriteOut,
    private readonly maxBytes: number,
    /** The output can never take a write again (a pipe whose reader closed it): drop at once. */
    private readonly broken: () => boolean = () => false,
  ) {}

  write(text: string): void {
    // At most 3 bytes of UTF-8 per UTF-16 unit: room for that is room enough.
    const most = text.length * 3;
    if (this.broken() || this.held + text.length > this.maxBytes) {
      this.dropped += linesIn(text);
      return;
    }
    const into = this.room(most, false)!;
    this.took(this.used + into.write(text, this.used));
  }

  /**
   * Room for at most `n` more bytes of whole lines, written into the returned buffer from `at` on and then given
   * with `took`; null when they would pass the bound (or the output is broken): the caller drops them (`drop`).
   */
  room(n: number, bounded = true): Buffer | null {
    if (bounded && (this.broken() || this.held + n > this.maxBytes)) return null;
    if (this.current === null || this.used + n > this.current.length) {
      this.seal();
      if (n > BATCH_BYTES) this.current = Buffer.allocUnsafe(n);
      else {
        this.current = this.spare ?? Buffer.allocUnsafe(BATCH_BYTES);
        this.spare = null;
      }
    }
    return this.current;
  }

  /** Where the bytes written into `room`'s buffer start. */
  get at(): number {
    return this.used;
  }

  /** The bytes written into `room`'s buffer end at `end`. */
  took(end: number): void {
    this.held += end - this.used;
    this.used = end;
    // A buffer made for one long line goes out on its own.
    if (this.current!.length > BATCH_BYTES) this.seal();
    if (this.filled.length > 0) this.next();
    else if (this.linger === null && !this.writing) {
      this.linger = setTimeout(() => this.next(), LINGER_MS);
      this.linger.unref();
    }
  }

  /** Counts lines dropped before they reached this sink. */
  drop(lines: number): void {
    this.dropped += lines;
  }

  flush(): void {
    this.seal();
    this.next();
  }

  drain(ms: number): Promise<void> {
    this.flush();
    if (!this.writing && this.held === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Moves the buffer being filled to the filled ones. */
  private seal(): void {
    if (this.current !== null && this.used > 0) {
      this.filled.push(this.current.subarray(0, this.used));
      this.current = null;
      this.used = 0;
    }
  }

  private next(): void {
    if (this.linger !== null) {
      clearTimeout(this.linger);
      this.linger = null;
    }
    if (this.writing || this.retry !== null) return;
    if (this.filled.length === 0) this.seal();
    if (this.filled.length === 0) return;
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) {
      this.retry = setTimeout(() => {
        this.retry = null;
        this.next();
      }, wait);
      this.retry.unref();
      return;
    }
    if (this.broken()) {
      this.dropHeld();
      return;
    }
    const chunk = this.filled.shift()!;
    this.writing = true;
    this.out(chunk, (err) => {
      this.writing = false;
      this.held -= chunk.length;
      if (err) {
        this.dropped += linesIn(chunk);
        this.pausedUntil = Date.now() + RETRY_AFTER_MS;
        if (this.broken()) {
          this.dropHeld();
          return;
        }
      } else if (chunk.buffer.byteLength === BATCH_BYTES && chunk.byteOffset === 0 && this.spare === null) {
        this.spare = Buffer.from(chunk.buffer, 0, BATCH_BYTES);
      }
      if (this.held === 0) this.settle();
      else if (this.filled.length > 0 || this.waiters.length > 0) this.next();
      else {
        this.linger = setTimeout(() => this.next(), LINGER_MS);
        this.linger.unref();
      }
    });
  }

  private dropHeld(): void {
    this.seal();
    for (const b of this.filled.splice(0)) this.dropped += linesIn(b);
    this.held = 0;
    this.settle();
  }

  private settle(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/** A file descriptor written with fs.write on libuv's pool, all of each chunk (a short write continues). */
function fdOutput(fd: number): WriteOut {
  return (chunk, done) => {
    const rest = (from: number) =>
      fsWrite(fd, chunk, from, chunk.length - from, null, (err, n) => {
        if (err) done(err);
        else if (from + n < chunk.length) rest(from + n);
        else done(null);
      });
    rest(0);
  };
}

/** A stream (a pipe, socket or terminal) whose errors are taken here, so none is ever thrown as uncaught. */
function streamOutput(stream: NodeJS.WritableStream & { destroyed?: boolean }): { out: WriteOut; broken: () => boolean } {
  // A reader that closed the pipe never reads again: from then on lines are dropped without another write.
  let gone = false;
  const failed = (err: Error | null | undefined) => {
    const code = (err as NodeJS.ErrnoException | null | undefined)?.code;
    if (code === 'EPIPE' || code === 'ECONNRESET' || code === 'ERR_STREAM_DESTROYED') gone = true;
  };
  stream.on('error', failed);
  return {
    out: (chunk, done) => {
      stream.write(chunk, (err) => {
        failed(err);
        done(err ?? null);
      });
    },
    broken: () => gone || stream.destroyed === true,
  };
}

/**
 * A sink writing to `fd` as the kind of file it is: a file with fs.write, a pipe, socket or terminal through the
 * stream `stream` makes for it (process.stdout on the main thread; the log writer thread opens its own).
 */
export function fdSink(fd: number, maxBytes: number, stream: () => NodeJS.WritableStream & { destroyed?: boolean }): BoundedSink {
  let kind: 'stream' | 'fd' | 'none';
  try {
    const st = fstatSync(fd);
    kind = st.isFIFO() || st.isSocket() || isatty(fd) ? 'stream' : 'fd';
  } catch {
    kind = 'none';
  }
  if (kind === 'fd') return new BoundedSink(fdOutput(fd), maxBytes);
  if (kind === 'none')
    return new BoundedSink(
      (_, done) => done(new Error(`fd ${fd} is closed`)),
      maxBytes,
      () => true,
    );
  const { out, broken } = streamOutput(stream());
  return new BoundedSink(out, maxBytes, broken);
}

/** A worker's stdout: Node posts each write to the main thread, which may be slow to take them; one post a turn. */
class WorkerSink implements LogSink {
  dropped = 0;
  private lines: string[] = [];
  private scheduled = false;

  constructor(private readonly maxBytes: number) {
    process.stdout.on('error', () => undefined);
  }

  write(text: string): void {
    this.lines.push(text);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.lines.length === 0) return;
    const text = this.lines.join('');
    this.lines = [];
    if (process.stdout.writableLength + text.length > this.maxBytes) this.dropped += linesIn(text);
    else process.stdout.write(text);
  }

  drain(): Promise<void> {
    this.flush();
    return Promise.resolve();
  }
}

/** The bound until `configureLogSink` sets LOG_BUFFER_BYTES: what a command line tool logs before its config is read. */
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
let sink: LogSink | null = null;
let maxBytes = DEFAULT_MAX_BYTES;
let threaded = false;

/**
 * Sets this thread's bound (LOG_BUFFER_BYTES) before its first line. `thread`: the main thread's lines are
 * written by a thread of their own (log-thread.ts), as `serve` does; command line tools write them themselves.
 */
export function configureLogSink(bytes: number, thread = false): void {
  maxBytes = bytes;
  threaded = thread && isMainThread;
}

/** The main thread's sink without a writer thread: stdout, through process.stdout when it is a stream. */
const mainThreadSink = (): LogSink => fdSink(1, maxBytes, () => process.stdout);

/** This thread's sink, made on first use. */
export function logSink(): LogSink {
  sink ??= !isMainThread ? new WorkerSink(maxBytes) : threaded ? new ThreadedSink(maxBytes, mainThreadSink) : mainThreadSink();
  return sink;
}

/** Lines this thread dropped (0 before it logged anything). */
export const droppedLogLines = (): number => sink?.dropped ?? 0;

/**
 * Takes a worker's stdout (a Worker made with `stdout: true`) into the main thread's sink, or into `write` (a
 * Logger's `passOn`, so its lines go wherever that logger's go).
 */
export function forwardWorkerOutput(stdout: NodeJS.ReadableStream, write: (text: string) => void = (text) => logSink().write(text)): void {
  stdout.on('data', (chunk: Buffer | string) => write(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
}
