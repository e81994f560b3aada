/**
 * The main thread's handle on the webhook worker (webhook/worker.ts): starts
 * it, sends it commands and resolves each with its answer, passes its state
 * rows on, and wakes it when the feed's watermark moves after it asked
 * (feed/watermark.ts). A worker that exits unbidden fails every command in
 * flight and is reported through `onExit`.
 */
import type { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { forwardWorkerOutput } from '../log-sink.js';
import { ownModule, startWorker } from '../own-modules.js';
import type { WriteOp } from '../types/stored.js';
import { type HooksCommand, type HooksMessage, type HooksRequest, type HooksWorkerData, WAKE } from '../webhook/protocol.js';

const WORKER_URL = ownModule(import.meta.url, '../webhook/worker');

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

export class HooksWorker {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private closing = false;
  private lastError: Error | null = null;
  /** Called once if the worker exits without being closed, with what ended it. */
  onExit: ((why: string) => void) | null = null;

  private constructor(
    private readonly worker: Worker,
    onSave: (ops: WriteOp[]) => void,
  ) {
    worker.on('message', (m: HooksMessage) => {
      if (m.kind === 'save') onSave(m.ops);
      else if (m.kind === 'answer') {
        const p = this.pending.get(m.seq);
        this.pending.delete(m.seq);
        if (m.error !== undefined) p?.reject(new Error(`webhook worker: ${m.error}`));
        else p?.resolve(m.value);
      }
    });
    // An uncaught error ends the worker; 'exit' follows and reports it.
    worker.on('error', (err) => {
      this.lastError = err;
    });
    worker.once('exit', (code) => {
      const why = `exited with code ${code}${this.lastError ? `: ${this.lastError.stack ?? this.lastError}` : ''}`;
      for (const p of this.pending.values()) p.reject(new Error(`webhook worker ${why}`));
      this.pending.clear();
      if (!this.closing) this.onExit?.(why);
    });
  }

  /** Starts a worker; resolves once it has opened the store. */
  static start(
    data: Omit<HooksWorkerData, 'config'> & { config: Config },
    log: Logger,
    onSave: (ops: WriteOp[]) => void,
  ): Promise<HooksWorker> {
    const worker = startWorker(WORKER_URL, {
      workerData: data satisfies HooksWorkerData,
      // Its log lines go where the main thread's go: through the bounded sink (log-sink.ts), as a shard's do.
      stdout: true,
    });
    forwardWorkerOutput(worker.stdout, (text) => log.passOn(text));
    return new Promise((resolve, reject) => {
      const failed = (err: unknown) => {
        worker.off('exit', exited);
        reject(err);
      };
      const exited = (code: number) => failed(new Error(`webhook worker exited with code ${code} while starting`));
      worker.once('error', failed);
      worker.once('exit', exited);
      worker.once('message', () => {
        worker.off('error', failed);
        worker.off('exit', exited);
        resolve(new HooksWorker(worker, onSave));
      });
    });
  }

  call<T>(command: HooksCommand): Promise<T> {
    const seq = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(seq, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ seq, command } satisfies HooksRequest);
    });
  }

  wake(): void {
    this.worker.postMessage(WAKE);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.worker.terminate();
  }
}
