/**
 * `netsot users add [--superuser] <email>` and `users promote <email>`
 * (README, "Trusted-proxy header"): an operator makes the first superuser
 * before the first start, so SERVICE_NEW_USERS_AS_SUPERUSER can be false
 * from day one. On the data dir (LMDB) or the database (PostgreSQL, through
 * NETSOT_STORE as serve reads it); refused while a server holds either.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { storeEnv } from '../helpers/postgres.js';
import { TestServer } from '../helpers/server.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) if (s.proc.exitCode === null) await s.stop(false);
});

const NEW_USERS_PLAIN = { SERVICE_NEW_USERS_AS_SUPERUSER: 'false' };

async function serve(dataDir: string): Promise<TestServer> {
  const s = await TestServer.start({ dataDir, env: NEW_USERS_PLAIN });
  servers.push(s);
  return s;
}

const users = async (dataDir: string, ...args: string[]) =>
  runCli(['users', ...args, '--data-dir', dataDir], { env: await storeEnv(dataDir) });

describe('the users command', () => {
  // Five processes one after another (two commands, a server, a command, a server): slow on a busy machine.
  test('a superuser made before the first start is one; a user the header names later is not', async () => {
    const dir = join(tempDir('users'), 'data');
    const added = await users(dir, 'add', '--superuser', 'root@example.com');
    expect(added.code, added.stderr).toBe(0);
    const made = JSON.parse(added.stdout);
    expect(made).toEqual({ id: 1, email: 'root@example.com', is_superuser: true, secret_key: expect.any(String) });
    expect(added.stderr).toBe('netsot users: root@example.com created (superuser)\n');

    const s = await serve(dir);
    expect((await s.post('/api/sites/', { name: 'by-root' }, { as: 'root@example.com' })).status).toBe(201);
    expect((await s.post('/api/sites/', { name: 'by-new' }, { as: 'new@example.com' })).status).toBe(403);
    // The key printed is the user's: it signs in.
    const login = await s.post('/api/authenticate/', { email: 'root@example.com', secret_key: made.secret_key }, { as: null });
    expect(login.status, login.text).toBe(200);

    const refused = await users(dir, 'promote', 'new@example.com');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^netsot users: .* in use by .*\n$/);

    await s.stop(false);
    const promoted = await users(dir, 'promote', 'new@example.com');
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(JSON.parse(promoted.stdout)).toEqual({ id: 2, email: 'new@example.com', is_superuser: true });
    const again = await serve(dir);
    expect((await again.post('/api/sites/', { name: 'by-new' }, { as: 'new@example.com' })).status).toBe(201);
  }, 90_000);

  test('add refuses an existing user without --superuser, and promotes one with it; promote refuses an unknown user', async () => {
    const dir = join(tempDir('users'), 'data');
    expect((await users(dir, 'add', 'plain@example.com')).code).toBe(0);
    const twice = await users(dir, 'add', 'plain@example.com');
    expect(twice.code).toBe(1);
    expect(twice.stderr).toBe('netsot users: user plain@example.com already exists; add --superuser to promote it\n');
    const up = await users(dir, 'add', '--superuser', 'plain@example.com');
    expect(up.code).toBe(0);
    expect(JSON.parse(up.stdout)).toEqual({ id: 1, email: 'plain@example.com', is_superuser: true });
    expect(up.stderr).toBe('netsot users: plain@example.com promoted to superuser\n');
    const none = await users(dir, 'promote', 'ghost@example.com');
    expect(none.code).toBe(1);
    expect(none.stderr).toBe("netsot users: there is no user ghost@example.com; 'users add --superuser ghost@example.com' creates one\n");
  });

  test('add refuses an address that is not one, or is over 254 characters', async () => {
    const dir = join(tempDir('users'), 'data');
    const bad = await users(dir, 'add', 'not-an-email');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe("netsot users: 'not-an-email' is not a valid email address\n");
    const long = await users(dir, 'add', `${'a'.repeat(250)}@example.com`);
    expect(long.code).toBe(1);
    expect(long.stderr).toBe('netsot users: an email address has at most 254 characters; got 262\n');
  });
});
