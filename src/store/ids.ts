/**
 * Cross-thread id state, shared by the main thread and every shard through
 * SharedArrayBuffers:
 *
 * - IdCounters: one Int32 slot per kind, bumped with Atomics.add, so ids are
 *   unique across shards without a round trip. Initialised at start-up from
 *   the high-water marks the store keeps (see store/lmdb.ts), so an id is
 *   never reused even after its object was deleted; gaps are fine.
 * - IdShardIndex: per kind, a growable byte array mapping id → shard + 1
 *   (0 = none). Shards write it when they create or delete; the main thread
 *   reads it to send `/api/<c>/<id>/` straight to the owning shard.
 *
 * | operation          | cost |
 * |--------------------|------|
 * | next id            | O(1) atomic add |
 * | index get / set    | O(1); set may grow the buffer (amortised O(1)) |
 */
import { KINDS, type Kind, kindSlot } from './kinds.js';

export interface SharedIdState {
  counters: SharedArrayBuffer;
  index: Record<string, SharedArrayBuffer>;
}

const INDEX_MAX_BYTES = 1 << 30; // virtual reservation; pages are committed on touch

export function createSharedIdState(initial: Partial<Record<Kind, number>>): SharedIdState {
  const counters = new SharedArrayBuffer(KINDS.length * 4);
  const view = new Int32Array(counters);
  for (const kind of KINDS) view[kindSlot(kind)] = initial[kind] ?? 0;
  const index: Record<string, SharedArrayBuffer> = {};
  for (const kind of KINDS) index[kind] = new SharedArrayBuffer(4096, { maxByteLength: INDEX_MAX_BYTES });
  return { counters, index };
}

export class IdCounters {
  private readonly view: Int32Array;
  constructor(state: SharedIdState) {
    this.view = new Int32Array(state.counters);
  }
  next(kind: Kind): number {
    return Atomics.add(this.view, kindSlot(kind), 1) + 1;
  }
  current(kind: Kind): number {
    return Atomics.load(this.view, kindSlot(kind));
  }
  /** Makes the next id of `kind` above `atLeast` (a standby taking over: cluster/replica.ts); never lowers it. */
  raise(kind: Kind, atLeast: number): void {
    const slot = kindSlot(kind);
    for (;;) {
      const now = Atomics.load(this.view, slot);
      if (now >= atLeast || Atomics.compareExchange(this.view, slot, now, atLeast) === now) return;
    }
  }
}

export class IdShardIndex {
  constructor(private readonly state: SharedIdState) {}

  private bytes(kind: Kind, minLength = 0): Uint8Array {
    const sab = this.state.index[kind];
    if (minLength > sab.byteLength) {
      let size = sab.byteLength;
      while (size < minLength) size *= 2;
      try {
        sab.grow(Math.min(size, sab.maxByteLength));
      } catch {
        /* another thread grew it first */
      }
    }
    return new Uint8Array(sab);
  }

  /** The shard that owns `id`, or -1 when no shard holds it. */
  get(kind: Kind, id: number): number {
    if (!Number.isSafeInteger(id) || id < 0) return -1;
    const view = this.bytes(kind);
    return id < view.length ? Atomics.load(view, id) - 1 : -1;
  }

  set(kind: Kind, id: number, shard: number): void {
    Atomics.store(this.bytes(kind, id + 1), id, shard + 1);
  }

  clear(kind: Kind, id: number): void {
    const view = this.bytes(kind);
    if (id < view.length) Atomics.store(view, id, 0);
  }
}
