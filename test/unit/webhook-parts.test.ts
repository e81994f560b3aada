/**
 * The pure parts of webhooks (README, Webhooks): the allowed-networks check
 * and the lookup a delivery connects through (DNS rebinding), the settings,
 * the signature, the store rows' rings and the slots bounding attempts.
 */
import { createHmac } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig, webhookSettings } from '../../src/config.js';
import { parseCidr } from '../../src/ip/address.js';
import type { DeliveryAttempt } from '../../src/model/webhook.js';
import type { WebhookRow } from '../../src/types/stored.js';
import { AllowedNetworks, NetworkNotAllowed } from '../../src/webhook/networks.js';
import { signature } from '../../src/webhook/post.js';
import { ATTEMPTS_KEPT, attemptOps, FAILURES_KEPT, readHooks, removalOps } from '../../src/webhook/rows.js';
import { Slots } from '../../src/webhook/slots.js';

const cidrs = (...texts: string[]) => texts.map((t) => parseCidr(t) as Exclude<ReturnType<typeof parseCidr>, string>);

/** A resolver answering each call with the next of `answers` (the last one again when they run out). */
function resolverOf(answers: string[][]) {
  let call = 0;
  return (_host: string, _o: unknown, cb: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void) => {
    const found = answers[Math.min(call++, answers.length - 1)];
    cb(
      null,
      found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

/** The lookup's answer, as net.connect would get it. */
function connectTo(n: AllowedNetworks, all: boolean): Promise<{ err: NodeJS.ErrnoException | null; address: unknown }> {
  return new Promise((resolve) => n.lookup('hooks.example', { all }, (err, address) => resolve({ err, address })));
}

describe('allowed networks', () => {
  test('allowed networks contain an address by prefix, IPv4-mapped IPv6 as its IPv4 address', () => {
    const n = new AllowedNetworks(cidrs('10.0.0.0/8', '2001:db8::/32', '192.0.2.7'));
    expect(n.allows('10.1.2.3')).toBe(true);
    expect(n.allows('11.0.0.1')).toBe(false);
    expect(n.allows('::ffff:10.9.9.9')).toBe(true);
    expect(n.allows('::ffff:127.0.0.1')).toBe(false);
    expect(n.allows('2001:db8:1::5')).toBe(true);
    expect(n.allows('2001:db9::1')).toBe(false);
    expect(n.allows('192.0.2.7')).toBe(true);
    expect(n.allows('192.0.2.8')).toBe(false);
    expect(n.allows('not an address')).toBe(false);
    expect(new AllowedNetworks(null).allows('127.0.0.1')).toBe(true);
  });

  test('a host is refused at create when any address it resolves to is outside, and nothing is resolved while any is allowed', async () => {
    const n = new AllowedNetworks(cidrs('10.0.0.0/8'), resolverOf([['10.0.0.5', '127.0.0.1']]));
    expect(await n.refusal('hooks.example')).toBe('hooks.example resolves to 127.0.0.1, outside WEBHOOK_ALLOWED_NETWORKS.');
    expect(await n.refusal('10.0.0.9')).toBeNull();
    expect(await n.refusal('[::1]')).toBe('::1 is outside WEBHOOK_ALLOWED_NETWORKS.');
    const failing = new AllowedNetworks(cidrs('10.0.0.0/8'), (_h, _o, cb) => cb(Object.assign(new Error('nx'), { code: 'ENOTFOUND' }), []));
    expect(await failing.refusal('gone.example')).toBe('The host gone.example could not be resolved.');
    const any = new AllowedNetworks(null, () => {
      throw new Error('resolved while any network is allowed');
    });
    expect(await any.refusal('hooks.example')).toBeNull();
  });

  test('the connection lookup checks the address it connects to, so a name that later resolves elsewhere is refused', async () => {
    // Allowed when the hook was made, then rebound to the loopback address.
    const n = new AllowedNetworks(cidrs('10.0.0.0/8'), resolverOf([['10.0.0.5'], ['127.0.0.1']]));
    expect(await n.refusal('hooks.example')).toBeNull();
    const rebound = await connectTo(n, false);
    expect(rebound.err).toBeInstanceOf(NetworkNotAllowed);
    expect(rebound.err!.code).toBe('ENETWORKNOTALLOWED');
    expect(rebound.err!.message).toBe('127.0.0.1 is outside WEBHOOK_ALLOWED_NETWORKS');

    const fine = new AllowedNetworks(cidrs('10.0.0.0/8'), resolverOf([['10.0.0.5', '10.0.0.6']]));
    expect(await connectTo(fine, false)).toEqual({ err: null, address: '10.0.0.5' });
    expect((await connectTo(fine, true)).address).toEqual([
      { address: '10.0.0.5', family: 4 },
      { address: '10.0.0.6', family: 4 },
    ]);
    expect(fine.literalRefused('10.0.0.1')).toBeNull();
    expect(fine.literalRefused('[::ffff:127.0.0.1]')).toBeInstanceOf(NetworkNotAllowed);
    expect(fine.literalRefused('hooks.example')).toBeNull();
  });
});

describe('webhook settings', () => {
  test('webhook settings have their defaults, take CIDR lists and refuse bad values', () => {
    const d = webhookSettings(loadConfig({}));
    expect(d).toEqual({
      allowedNetworks: null,
      timeoutMs: 10_000,
      retryBaseMs: 1000,
      retryMaxMs: 300_000,
      batchChanges: 1000,
      batchBytes: 1024 * 1024,
      concurrency: 16,
    });
    expect(loadConfig({ WEBHOOK_ALLOWED_NETWORKS: 'any' }).webhookAllowedNetworks).toBeNull();
    expect(loadConfig({ WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/8, 2001:db8::/32,192.0.2.1' }).webhookAllowedNetworks).toEqual(
      cidrs('10.0.0.0/8', '2001:db8::/32', '192.0.2.1/32'),
    );
    expect(() => loadConfig({ WEBHOOK_ALLOWED_NETWORKS: '10.0.0.1/8' })).toThrow(
      "WEBHOOK_ALLOWED_NETWORKS: '10.0.0.1/8' has host bits set",
    );
    expect(() => loadConfig({ WEBHOOK_ALLOWED_NETWORKS: 'intranet' })).toThrow(ConfigError);
    expect(() => loadConfig({ WEBHOOK_RETRY_BASE_MS: '5000', WEBHOOK_RETRY_MAX_MS: '1000' })).toThrow(
      'WEBHOOK_RETRY_MAX_MS (1000) must be at least WEBHOOK_RETRY_BASE_MS (5000)',
    );
    expect(() => loadConfig({ WEBHOOK_TIMEOUT_MS: '0' })).toThrow('WEBHOOK_TIMEOUT_MS must be between 100 and 600000, got 0');
  });
});

describe('webhook signature and rows', () => {
  test('the signature is sha256= and the hex HMAC-SHA256 of the body keyed with the secret', () => {
    const body = Buffer.from('[{"id":1}]');
    expect(signature('k', [body])).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
    expect(signature('k', [body])).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  test('the signature of a body sent in parts is that of the parts joined', () => {
    const parts = [Buffer.from('['), Buffer.from('{"id":1},{"id":2}'), Buffer.from(','), Buffer.from('{"id":3}'), Buffer.from(']')];
    expect(signature('k', parts)).toBe(`sha256=${createHmac('sha256', 'k').update(Buffer.concat(parts)).digest('hex')}`);
    expect(signature('k', parts)).not.toBe(signature('k2', parts));
  });

  test('attempt rows fill two rings that overwrite their slots in turn, and read back newest kept', () => {
    const attempt = (n: number, failure?: number): DeliveryAttempt & { failure?: number } => ({
      n,
      at: n,
      delivery: `d${n}`,
      first: n,
      last: n,
      changes: 1,
      bytes: 10,
      status: failure === undefined ? 200 : 500,
      error: null,
      ms: 1,
      nextRetryAt: null,
      ...(failure === undefined ? {} : { failure }),
    });
    const table = new Map<string, WebhookRow>();
    const hook = { id: 3, url: 'http://x/', secret: 's', siteId: null, resourceName: null, event: null, active: true };
    table.set('hook', { hook: 3, part: 'hook', value: hook });
    let failures = 0;
    for (let n = 1; n <= 3 * ATTEMPTS_KEPT; n++) {
      const a = n <= 5 ? attempt(n, ++failures) : attempt(n);
      for (const op of attemptOps(3, a))
        table.set((op.key as [number, string])[1], { hook: 3, part: (op.key as [number, string])[1], value: a });
    }
    expect(table.size).toBe(1 + ATTEMPTS_KEPT + 5);
    const [read] = readHooks([...table.values()]);
    expect(read.attempts.map((a) => a.n)).toEqual([
      1,
      2,
      3,
      4,
      5,
      ...Array.from({ length: ATTEMPTS_KEPT }, (_, i) => 2 * ATTEMPTS_KEPT + 1 + i),
    ]);
    expect(removalOps(3)).toHaveLength(2 + ATTEMPTS_KEPT + FAILURES_KEPT);
    expect(new Set(removalOps(3).map((op) => (op.key as [number, string])[1]))).toEqual(
      new Set([
        'hook',
        'cursor',
        ...[...table.keys()].filter((k) => k !== 'hook'),
        ...Array.from({ length: FAILURES_KEPT }, (_, k) => `f${k}`),
      ]),
    );
    // Rows left of a hook without its record are not a hook.
    expect(readHooks([{ hook: 9, part: 'cursor', value: { cursor: 1, failures: 0 } }])).toEqual([]);
  });
});

describe('slots', () => {
  test('slots let a bounded number through and serve waiters in the order they came', async () => {
    const slots = new Slots(2);
    const order: number[] = [];
    await slots.acquire();
    await slots.acquire();
    const waiting = [3, 4, 5].map((n) => slots.acquire().then(() => order.push(n)));
    await Promise.resolve();
    expect(order).toEqual([]);
    slots.release();
    slots.release();
    await Promise.all(waiting.slice(0, 2));
    expect(order).toEqual([3, 4]);
    slots.release();
    await waiting[2];
    expect(order).toEqual([3, 4, 5]);
    slots.release();
    slots.release();
    slots.release();
    await slots.acquire();
    await slots.acquire();
  });
});
