/**
 * The test client (test/helpers/server.ts) against uWS's idle timer (README, "Idle connections"). A test
 * that holds its event loop for longer than the server keeps an idle keep-alive connection (a synchronous
 * check over thousands of ids once did, in the webhooks kill -9 test) must still have its next request
 * answered: on a new connection, not on the one the server closed meanwhile, whose close the held loop
 * had not yet read.
 */
import { channel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';

/** Past uWS's idle timer (10 s, checked on a 4 s tick: a connection goes after 8 to 12 s), with room for a slow machine. */
const HELD_MS = 13_500;

/** Holds this process's event loop, as a long synchronous check does. */
const hold = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

let s: TestServer;
/** Connections fetch opened to `s`. */
let opened = 0;
const onConnected = (m: unknown) => {
  if (Number((m as { connectParams: { port: string | number } }).connectParams.port) === s.port) opened++;
};

beforeAll(async () => {
  s = await TestServer.start();
  channel('undici:client:connected').subscribe(onConnected);
});
afterAll(async () => {
  channel('undici:client:connected').unsubscribe(onConnected);
  await s.stop();
});

// Where the held stretch starts decides whether the loop polls before fetch picks a connection: after a timer
// it does not at all (the webhooks test's case), after an answer read from a socket only on the second turn.
test.each([
  ['a timer', () => new Promise((ok) => setTimeout(ok, 20))],
  ['an answer', () => Promise.resolve()],
])(
  'a request made after the event loop was held past the server idle timer, resumed by %s, is answered on a new connection',
  async (_, resume) => {
    expect((await s.get('/api/')).status).toBe(200);
    await resume();
    const before = opened;
    hold(HELD_MS);
    const r = await s.get('/api/');
    expect(r.status).toBe(200);
    // The server did close the idle connection: the answer came on another.
    expect(opened).toBe(before + 1);
  },
  40_000,
);
