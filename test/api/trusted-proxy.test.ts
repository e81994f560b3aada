/**
 * The user header is taken only from trusted proxies (README, "Trusted-proxy
 * header"): AUTH_HEADER_TRUSTED_PROXIES, loopback by default; from any other
 * peer it is ignored as if absent, so such a request is not authenticated and
 * no user is created. New users' emails are at most 254 characters. Servers
 * run in process; `peer` sets the address the server sees. HOST=0.0.0.0 so
 * that the check runs per request (on a loopback listener every peer is this
 * machine's own, which the default list trusts whole), with the ADVERTISE_URL a
 * PostgreSQL node on a wildcard address needs.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectJsonError } from '../helpers/fixtures.js';
import { InjectServer } from '../helpers/inject.js';

const NOT_PROVIDED = 'Authentication credentials were not provided.';

describe('the user header with the default trusted proxies', () => {
  let s: InjectServer;
  beforeAll(async () => {
    // On PostgreSQL a node on a wildcard address must say where standbys send writers (ADVERTISE_URL).
    s = await InjectServer.start({ env: { HOST: '0.0.0.0', ADVERTISE_URL: 'http://127.0.0.1:9' } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const emails = async () => ((await s.get('/api/users/')).json as { email: string }[]).map((u) => u.email);

  test('the header counts from loopback peers, IPv4, IPv6 and IPv4 mapped into IPv6', async () => {
    for (const peer of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) {
      const r = await s.get('/api/users/0/', { as: `loop-${peer.replace(/[:.]/g, '')}@example.com`, peer });
      expect(r.status, `${peer}: ${r.text}`).toBe(200);
    }
  });

  test('the header from another peer is ignored as if absent: 401, and no user is created', async () => {
    for (const peer of ['10.0.0.5', '192.0.2.1', '2001:db8::1', '::ffff:10.0.0.5']) {
      const r = await s.get('/api/users/0/', { as: 'intruder@example.com', peer });
      expectJsonError(r, 401, NOT_PROVIDED);
      expect((await s.post('/api/sites/', { name: `x${peer}` }, { as: 'admin@localhost', peer })).status).toBe(401);
    }
    expect(await emails()).not.toContain('intruder@example.com');
  });

  test('a token still authenticates from any peer', async () => {
    const key = (await s.get('/api/users/0/?with_secret_key=true', { as: 'tokens@example.com' })).json.secret_key;
    const login = await s.post('/api/authenticate/', { email: 'tokens@example.com', secret_key: key }, { as: null, peer: '10.0.0.5' });
    expect(login.status, login.text).toBe(200);
    const r = await s.get('/api/users/0/', {
      as: null,
      peer: '10.0.0.5',
      headers: { Authorization: `AuthToken tokens@example.com:${login.json.auth_token}` },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.email).toBe('tokens@example.com');
  });

  test('a new email over 254 characters is refused with 400 and creates no user; 254 characters are taken', async () => {
    const at = (n: number) => `${'a'.repeat(n - '@example.com'.length)}@example.com`;
    for (const email of [at(255), at(70_000)]) {
      const r = await s.get('/api/users/0/', { as: email });
      expectJsonError(r, 400, 'Username must be an email address of at most 254 characters');
    }
    expect((await emails()).some((e) => e.length > 254)).toBe(false);
    const ok = await s.get('/api/users/0/', { as: at(254) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.email).toBe(at(254));
  });

  test('a server listening beyond loopback with new users as superusers warns at start', () => {
    const events = s.output
      .join('')
      .split('\n')
      .filter((l) => l.includes('"insecure-default"'));
    expect(events).toHaveLength(1);
    expect(events[0]).toContain('SERVICE_NEW_USERS_AS_SUPERUSER=true');
  });
});

describe('the user header with chosen trusted proxies', () => {
  test('only the listed proxies may name the user; loopback is then not trusted', async () => {
    const s = await InjectServer.start({ env: { AUTH_HEADER_TRUSTED_PROXIES: '10.1.0.0/16, 2001:db8::/32' } });
    try {
      expect((await s.get('/api/users/0/', { peer: '10.1.2.3' })).status).toBe(200);
      expect((await s.get('/api/users/0/', { peer: '2001:db8::7' })).status).toBe(200);
      expectJsonError(await s.get('/api/users/0/', { peer: '10.2.0.1' }), 401, NOT_PROVIDED);
      expectJsonError(await s.get('/api/users/0/', { peer: '127.0.0.1' }), 401, NOT_PROVIDED);
    } finally {
      await s.stop();
    }
  });

  test('`none` trusts nobody, and a server on loopback or with new users as plain users does not warn', async () => {
    const s = await InjectServer.start({ env: { AUTH_HEADER_TRUSTED_PROXIES: 'none', SERVICE_NEW_USERS_AS_SUPERUSER: 'false' } });
    try {
      expectJsonError(await s.get('/api/users/0/'), 401, NOT_PROVIDED);
      expect(s.output.join('')).not.toContain('insecure-default');
    } finally {
      await s.stop();
    }
  });

  test('a setting that is not a CIDR list stops start-up naming the entry', async () => {
    await expect(InjectServer.start({ env: { AUTH_HEADER_TRUSTED_PROXIES: '10.0.0.0/8,proxy.example' } })).rejects.toThrow(
      "AUTH_HEADER_TRUSTED_PROXIES must be a comma-separated list of CIDRs: 'proxy.example' is not an address or CIDR",
    );
  });
});
