import { describe, expect, test } from 'vitest';
import { InFlight } from '../../src/http/drain.js';

/** A lifecycle the test settles itself. */
function pending(): { promise: Promise<void>; settle: () => void } {
  let settle: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { promise, settle };
}

describe('requests in flight', () => {
  test('a drain with nothing in flight resolves true at once, and the app then counts as draining', async () => {
    const requests = new InFlight();
    expect(requests.isDraining()).toBe(false);
    expect(await requests.drain(10)).toBe(true);
    expect(requests.isDraining()).toBe(true);
  });

  test('a drain resolves true once the last request in flight settles, not before', async () => {
    const requests = new InFlight();
    const a = pending();
    const b = pending();
    requests.track(a.promise);
    requests.track(b.promise);
    expect(requests.count).toBe(2);
    let answered: boolean | undefined;
    const drained = requests.drain(5000).then((v) => {
      answered = v;
    });
    a.settle();
    await new Promise((r) => setImmediate(r));
    expect(answered).toBeUndefined();
    b.settle();
    await drained;
    expect(answered).toBe(true);
    expect(requests.count).toBe(0);
  });

  test('a drain resolves false when a request is still in flight after the timeout', async () => {
    const requests = new InFlight();
    requests.track(pending().promise);
    expect(await requests.drain(20)).toBe(false);
  });
});
