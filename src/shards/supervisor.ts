/**
 * One shard worker under the main thread's supervision (README, "Hostile
 * input, failures and limits"). The main thread talks to a shard only through this handle:
 * it batches requests to the worker, matches replies, and replaces the worker
 * when it dies or stops making progress, so no request — a runaway regular
 * expression, a body that exhausts a worker's heap — can take more than its
 * own shard down, and that only for the time a reload takes.
 *
 * - **Exit** (a crash, an out-of-memory error): noticed at once from the
 *   worker's `exit` event.
 * - **Stall**: the worker bumps a shared progress counter each time it takes a
 *   batch of requests or sends a batch of replies. Requests waiting while the
 *   counter stays still for `stallMs` mean the worker is stuck in one request;
 *   it is terminated. A shared counter rather than a ping message: a ping
 *   queues behind a long but healthy backlog of requests and would read as a
 *   stall, while the counter moves with every batch, and long but bounded
 *   work inside one request (rendering a million-item list) bumps it too
 *   (ShardState.heartbeat). Time spent inside a store commit's synchronous
 *   part (encoding a large write set) does not count: a second shared slot
 *   says when the worker is there; while the commit then syncs off the
 *   thread, the worker beats the counter (shard/commit-pipeline.ts, bulk-parts.ts, request-runner.ts).
 *
 * Either way every request the worker had not answered gets 503 with
 * Retry-After (none was acknowledged, so no acknowledged write is lost; one it
 * committed but did not answer is on disk like any unacknowledged write), a
 * fresh worker reloads the shard's sites from the store, and requests for
 * this shard are answered 503 until it is ready. Other shards keep serving.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { Errors, errorEnvelope } from '../errors.js';
import { forwardWorkerOutput } from '../log-sink.js';
import { ownModule, startWorker } from '../own-modules.js';
import type { FeedItem, RequestBatch, ShardControl, ShardReply, ShardRequest, Unsent } from '../shard/protocol.js';
import type { VersionNotice } from '../shard/site-versions.js';
import { ChunkStream } from './chunk-stream.js';

type Pending = (reply: ShardReply) => void;

/** What a freshly started worker needs besides its port and progress counter. */
export interface ShardLaunch {
  shardIndex: number;
  workerData: Record<string, unknown>;
  stallMs: number;
  /** Called with a message when the worker had to be replaced, and when the replacement is ready. */
  report: (message: string) => void;
  /** Called when a replacement worker has loaded the shard. */
  onRestarted?: (shardIndex: number) => void;
  /**
   * Called on every batch of replies once its requests are answered, with the Changes its commit made durable
   * (none for a batch that wrote nothing): the live feed's input (feed/hub.ts).
   */
  onReplies?: (shardIndex: number, feed: FeedItem[] | undefined) => void;
  /** Called with a batch's site versions before any of its replies is delivered (http/read-cache.ts). */
  onVersions?: (shardIndex: number, versions: VersionNotice) => void;
}

/** The worker's module, compiled or from source as this one runs (own-modules.ts). */
const WORKER_URL = ownModule(import.meta.url, '../shard/worker');
/** Longest wait between attempts when a replacement worker keeps failing to start. */
const MAX_BACKOFF_MS = 30_000;

interface Running {
  worker: Worker;
  port: MessagePort;
  progress: Int32Array;
}

/**
 * Messages are batched per event-loop turn in both directions: requests that
 * arrive in one turn travel to a shard as one array, and its replies come back
 * the same way. A postMessage wakes the other thread, and that wake-up, not
 * the work, is the cost of a small request, so this is what lets a shard hop
 * stay cheap under many parallel clients.
 */
export class SupervisedShard {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  /**
   * Streamed lists whose first chunk has arrived (P7). They are no longer pending: a client that stops reading
   * holds its stream still, and the shard, waiting for credit, must not read as stalled.
   */
  private readonly streams = new Map<number, ChunkStream>();
  private outbox: ShardRequest[] = [];
  private running: Running | null = null;
  private stopped = false;
  private lastLoadMs = 1000;
  private lastProgress = 0;
  private lastProgressAt = performance.now();
  private readonly watch: NodeJS.Timeout;
  /** Replacements since the last healthy start; sets the back-off. */
  private failures = 0;
  /** Bumped each time a worker is adopted: a cross-shard bulk commits only if the workers that prepared it still serve. */
  private generationCount = 0;

  private constructor(private readonly launch: ShardLaunch) {
    this.watch = setInterval(() => this.checkProgress(), Math.max(50, Math.min(1000, launch.stallMs / 4)));
    this.watch.unref();
  }

  /** Starts the worker; resolves once it has loaded its sites (a load failure rejects). */
  static async start(launch: ShardLaunch): Promise<SupervisedShard> {
    const shard = new SupervisedShard(launch);
    try {
      shard.adopt(await shard.spawn());
    } catch (err) {
      clearInterval(shard.watch);
      throw err;
    }
    return shard;
  }

  get inFlight(): number {
    return this.pending.size;
  }
  get ready(): boolean {
    return this.running !== null;
  }
  /** The sequence number of the last request sent. */
  get lastSeq(): number {
    return this.seq;
  }
  /** The sequence number of the oldest request not answered yet, or Infinity when none waits. */
  get oldestPending(): number {
    let oldest = Number.POSITIVE_INFINITY;
    // Requests are added in seq order and Map keeps insertion order, so the first key left is the oldest.
    for (const seq of this.pending.keys()) {
      oldest = seq;
      break;
    }
    return oldest;
  }
  /** Which worker serves now (see generationCount); -1 while none does. */
  get generation(): number {
    return this.running ? this.generationCount : -1;
  }

  /** Queues `req` (stamping its seq on it) for this turn's batch; answered 503 at once while the shard restarts. */
  send(req: Unsent): Promise<ShardReply> {
    const seq = ++this.seq;
    if (!this.running) return Promise.resolve(this.unavailable(seq));
    return new Promise((resolve) => {
      this.pending.set(seq, resolve);
      if (this.outbox.length === 0) setImmediate(this.flush);
      (req as ShardRequest).seq = seq;
      this.outbox.push(req as ShardRequest);
    });
  }

  /** Test hook (NETSOT_TEST_HOOKS): makes the worker exit or stall as a crash or a runaway request would. */
  control(message: ShardControl): void {
    this.running?.port.postMessage(message);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watch);
    const running = this.running;
    this.running = null;
    this.failStreams();
    if (running) {
      running.port.close();
      await running.worker.terminate();
    }
  }

  /**
   * Requests travel as JSON text: they are plain JSON data (a parsed body, the
   * route, the principal), and stringify + parse cost about half of
   * postMessage's structured clone of the same objects. Replies stay cloned:
   * their bodies are long strings, which a clone copies and JSON would escape.
   * Unread request bodies (ShardRequest.bytes) travel beside the text, in
   * request order, transferred: the worker's copy is the only one.
   */
  private readonly flush = (): void => {
    const batch = this.outbox;
    this.outbox = [];
    if (!this.running || batch.length === 0) return;
    let bodies: ArrayBuffer[] | null = null;
    for (const req of batch) if (req.bytes) (bodies ??= []).push(req.bytes);
    if (bodies === null) this.running.port.postMessage(JSON.stringify(batch));
    else this.running.port.postMessage({ batch: JSON.stringify(batch), bodies } satisfies RequestBatch, bodies);
  };

  private spawn(): Promise<Running> {
    const started = performance.now();
    const { port1, port2 } = new MessageChannel();
    // [0]: the progress counter; [1]: 1 while the worker is inside a store commit call (its synchronous part).
    const progress = new Int32Array(new SharedArrayBuffer(8));
    const worker = startWorker(WORKER_URL, {
      workerData: { ...this.launch.workerData, shardIndex: this.launch.shardIndex, port: port2, progress },
      transferList: [port2],
      // The worker's log lines reach stdout through the main thread's bounded sink, not Node's own piping (log-sink.ts).
      stdout: true,
    });
    forwardWorkerOutput(worker.stdout);
    return new Promise<Running>((resolve, reject) => {
      const failed = (err: unknown) => {
        port1.close();
        reject(err);
      };
      const exited = (code: number) => failed(new Error(`shard ${this.launch.shardIndex} exited with code ${code} while loading`));
      worker.once('error', failed);
      worker.once('exit', exited);
      worker.once('message', () => {
        worker.off('error', failed);
        worker.off('exit', exited);
        this.lastLoadMs = performance.now() - started;
        resolve({ worker, port: port1, progress });
      });
    });
  }

  private adopt(running: Running): void {
    if (this.stopped) {
      running.port.close();
      void running.worker.terminate();
      return;
    }
    this.running = running;
    this.generationCount++;
    this.lastProgress = Atomics.load(running.progress, 0);
    this.lastProgressAt = performance.now();
    running.port.on('message', (replies: ShardReply[]) => {
      const feed = replies[0]?.feed;
      const versions = replies[0]?.versions;
      if (versions) this.launch.onVersions?.(this.launch.shardIndex, versions);
      for (const reply of replies) {
        const done = this.pending.get(reply.seq);
        if (done) {
          this.pending.delete(reply.seq);
          if (reply.chunk && !reply.chunk.last) reply.stream = this.openStream(running, reply.seq);
          done(reply);
        } else if (reply.chunk) this.chunkArrived(reply.seq, reply.chunk);
      }
      this.launch.onReplies?.(this.launch.shardIndex, feed);
    });
    running.worker.on('error', (err) => this.launch.report(`shard ${this.launch.shardIndex} failed: ${err.stack ?? err}`));
    running.worker.once('exit', (code) => {
      if (this.running === running) this.replace(`exited with code ${code}`);
    });
  }

  /** The reader of a streamed list's later chunks; its flow control goes to the worker that streams it. */
  private openStream(running: Running, seq: number): ChunkStream {
    const stream = new ChunkStream(seq, (message) => {
      if (message.cancel) this.streams.delete(seq);
      if (this.running === running) running.port.postMessage(message);
    });
    this.streams.set(seq, stream);
    return stream;
  }

  private chunkArrived(seq: number, chunk: NonNullable<ShardReply['chunk']>): void {
    const stream = this.streams.get(seq);
    if (!stream) return;
    if (chunk.last) this.streams.delete(seq);
    stream.push(chunk);
  }

  /** The worker streaming them is gone: every open stream ends cut off. */
  private failStreams(): void {
    for (const stream of this.streams.values()) stream.fail();
    this.streams.clear();
  }

  private checkProgress(): void {
    const running = this.running;
    if (!running) return;
    const now = performance.now();
    const progress = Atomics.load(running.progress, 0);
    // Bounded work inside a commit call is not a stuck request, however slow the machine.
    const inStore = Atomics.load(running.progress, 1) === 1;
    if (progress !== this.lastProgress || this.pending.size === 0 || inStore) {
      this.lastProgress = progress;
      this.lastProgressAt = now;
      if (this.pending.size === 0) this.failures = 0;
      return;
    }
    if (now - this.lastProgressAt > this.launch.stallMs) {
      this.replace(`made no progress for ${Math.round(now - this.lastProgressAt)} ms with ${this.pending.size} requests waiting`);
    }
  }

  /** Drops the current worker, answers what it owed with 503, and starts another. */
  private replace(reason: string): void {
    const old = this.running;
    if (!old || this.stopped) return;
    this.running = null;
    this.launch.report(
      `shard ${this.launch.shardIndex} ${reason}; answering its ${this.pending.size} waiting requests 503 and restarting it`,
    );
    old.port.close();
    void old.worker.terminate();
    // What the main thread cached from this worker's memory goes with it: the new one may hold writes it committed unanswered.
    this.launch.onVersions?.(this.launch.shardIndex, { reset: true });
    for (const [seq, resolve] of this.pending) resolve(this.unavailable(seq));
    this.pending.clear();
    this.failStreams();
    this.outbox = [];
    this.restart();
  }

  private restart(): void {
    const delay = this.failures === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 1));
    this.failures++;
    const attempt = () => {
      if (this.stopped) return;
      this.spawn().then(
        (running) => {
          this.adopt(running);
          this.launch.report(`shard ${this.launch.shardIndex} is serving again (loaded in ${Math.round(this.lastLoadMs)} ms)`);
          this.launch.onRestarted?.(this.launch.shardIndex);
        },
        (err) => {
          this.launch.report(`shard ${this.launch.shardIndex} could not be restarted: ${(err as Error).message ?? err}`);
          this.restart();
        },
      );
    };
    setTimeout(attempt, delay);
  }

  /** The 503 a request gets while this shard is being replaced; Retry-After is about one load time. */
  private unavailable(seq: number): ShardReply {
    const err = Errors.shardRestarting(Math.max(1, Math.ceil(this.lastLoadMs / 1000)));
    return { seq, status: err.status, body: errorEnvelope(err), headers: err.headers };
  }
}
