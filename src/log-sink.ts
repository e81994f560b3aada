/**
 * Where a thread's log lines go (README, "Logs"): never a stall, never a
 * spin. The Logger (log.ts) hands over whole lines once per event-loop turn;
 * the sink writes them asynchronously, one write at a time, and whatever
 * arrives meanwhile is joined into the next write, so a busy process makes
 * few large writes. What it holds is bounded (LOG_BUFFER_BYTES): when the
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
import { isMainThread } from 'node:worker_threads';

export interface LogSink {
  /** Takes whole lines; returns at once, and never throws. */
  write(text: string): void;
  /** Lines dropped so far because the output fell behind or failed. */
  readonly dropped: number;
  /** Resolves once everything taken is written (or dropped), or after `ms`, whichever comes first. */
  drain(ms: number): Promise<void>;
}

/** How one write reaches the output: `done` gets the error of a failed write. */
type WriteOut = (chunk: Buffer, done: (err: Error | null) => void) => void;

/** Largest single write: a megabyte of lines at a time keeps each write short on any output. */
const MAX_WRITE_BYTES = 1024 * 1024;
/** After a failed write, the next attempt waits this long. */
const RETRY_AFTER_MS = 1000;

const linesIn = (text: string | Buffer): number => {
  let n = 0;
  if (typeof text === 'string') for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  else for (let i = text.indexOf(10); i >= 0; i = text.indexOf(10, i + 1)) n++;
  return n;
};

/** The bounded, asynchronous writer described above, over one output. */
export class BoundedSink implements LogSink {
  private pending: string[] = [];
  private pendingBytes = 0;
  private writing = false;
  private pausedUntil = 0;
  private retry: NodeJS.Timeout | null = null;
  private waiters: (() => void)[] = [];
  dropped = 0;

  constructor(
    private readonly out: WriteOut,
    private readonly maxBytes: number,
    /** The output can never take a write again (a pipe whose reader closed it): drop at once. */
    private readonly broken: () => boolean = () => false,
  ) {}

  write(text: string): void {
    const bytes = text.length;
    if (this.broken() || this.pendingBytes + bytes > this.maxBytes) {
      this.dropped += linesIn(text);
      return;
    }
    this.pending.push(text);
    this.pendingBytes += bytes;
    this.next();
  }

  drain(ms: number): Promise<void> {
    if (!this.writing && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private next(): void {
    if (this.writing || this.pending.length === 0 || this.retry !== null) return;
    const wait = this.pausedUntil - Date.now();
    if (wait > 0) {
      this.retry = setTimeout(() => {
        this.retry = null;
        this.next();
      }, wait);
      this.retry.unref();
      return;
    }
    if (this.broken()) return this.dropPending();
    let take = 0;
    let size = 0;
    while (take < this.pending.length && (take === 0 || size + this.pending[take].length <= MAX_WRITE_BYTES))
      size += this.pending[take++].length;
    const all = take === this.pending.length;
    const text = all ? this.pending.join('') : this.pending.splice(0, take).join('');
    if (all) this.pending = [];
    this.pendingBytes -= size;
    this.writing = true;
    const chunk = Buffer.from(text);
    this.out(chunk, (err) => {
      this.writing = false;
      if (err) {
        this.dropped += linesIn(chunk);
        this.pausedUntil = Date.now() + RETRY_AFTER_MS;
        if (this.broken()) return this.dropPending();
      }
      if (this.pending.length === 0) this.settle();
      else this.next();
    });
  }

  private dropPending(): void {
    for (const t of this.pending) this.dropped += linesIn(t);
    this.pending = [];
    this.pendingBytes = 0;
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

/** The main thread's stdout, as the kind of file it is. */
function stdoutSink(maxBytes: number): LogSink {
  let kind: 'stream' | 'fd' | 'none';
  try {
    const st = fstatSync(1);
    kind = st.isFIFO() || st.isSocket() || process.stdout.isTTY ? 'stream' : 'fd';
  } catch {
    kind = 'none';
  }
  if (kind === 'fd') return new BoundedSink(fdOutput(1), maxBytes);
  if (kind === 'none')
    return new BoundedSink(
      (_, done) => done(new Error('stdout is closed')),
      maxBytes,
      () => true,
    );
  const { out, broken } = streamOutput(process.stdout);
  return new BoundedSink(out, maxBytes, broken);
}

/** A worker's stdout: Node posts each write to the main thread, which may be slow to take them. */
class WorkerSink implements LogSink {
  dropped = 0;

  constructor(private readonly maxBytes: number) {
    process.stdout.on('error', () => undefined);
  }

  write(text: string): void {
    if (process.stdout.writableLength + text.length > this.maxBytes) this.dropped += linesIn(text);
    else process.stdout.write(text);
  }

  drain(): Promise<void> {
    return Promise.resolve();
  }
}

/** The bound until `configureLogSink` sets LOG_BUFFER_BYTES: what a command line tool logs before its config is read. */
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
let sink: LogSink | null = null;
let maxBytes = DEFAULT_MAX_BYTES;

/** Sets this thread's bound (LOG_BUFFER_BYTES) before its first line. */
export function configureLogSink(bytes: number): void {
  maxBytes = bytes;
}

/** This thread's sink, made on first use. */
export function logSink(): LogSink {
  sink ??= isMainThread ? stdoutSink(maxBytes) : new WorkerSink(maxBytes);
  return sink;
}

/** Lines this thread dropped (0 before it logged anything). */
export const droppedLogLines = (): number => sink?.dropped ?? 0;

/** Takes a worker's stdout (a Worker made with `stdout: true`) into the main thread's sink. */
export function forwardWorkerOutput(stdout: NodeJS.ReadableStream): void {
  stdout.on('data', (chunk: Buffer | string) => logSink().write(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
}
