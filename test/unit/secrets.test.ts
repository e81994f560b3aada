import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadServerKey, newSecretKey, SERVER_KEY_FILE, sameSecret, TokenSigner } from '../../src/auth/secrets.js';

const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 8);
const EXPIRY = 600;
const signer = new TokenSigner(KEY, EXPIRY);
const NOW = 1_700_000_000_000;

/** A token whose payload text is chosen freely but correctly signed under KEY. */
function signed(payloadText: string): string {
  const payload = Buffer.from(payloadText).toString('base64url');
  return `${payload}.${createHmac('sha256', KEY).update(payload).digest('base64url')}`;
}

describe('newSecretKey (docs/api.md §3.4)', () => {
  test('newSecretKey returns 44 URL-safe base64 characters ending in =', () => {
    for (let i = 0; i < 200; i++) {
      const k = newSecretKey();
      expect(k).toMatch(/^[A-Za-z0-9_-]{43}=$/);
      expect(Buffer.from(k, 'base64url')).toHaveLength(32);
    }
  });

  test('newSecretKey returns a different key each time', () => {
    const keys = new Set(Array.from({ length: 100 }, () => newSecretKey()));
    expect(keys.size).toBe(100);
  });
});

describe('sameSecret', () => {
  test('sameSecret is true only for identical strings', () => {
    const k = newSecretKey();
    expect(sameSecret(k, k)).toBe(true);
    expect(sameSecret(k, `${k}`)).toBe(true);
    expect(sameSecret(k, newSecretKey())).toBe(false);
    expect(sameSecret(k, k.slice(0, -1))).toBe(false);
    expect(sameSecret(k, '')).toBe(false);
    expect(sameSecret('', '')).toBe(true);
  });
});

describe('loadServerKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netsot-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('loadServerKey creates a 32-byte private key file and reuses it', () => {
    const first = loadServerKey(dir);
    expect(first).toHaveLength(32);
    const path = join(dir, SERVER_KEY_FILE);
    expect(readFileSync(path).equals(first)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadServerKey(dir).equals(first)).toBe(true);
  });

  test('loadServerKey replaces a key file of the wrong length', () => {
    writeFileSync(join(dir, SERVER_KEY_FILE), 'short');
    const key = loadServerKey(dir);
    expect(key).toHaveLength(32);
    expect(readFileSync(join(dir, SERVER_KEY_FILE)).equals(key)).toBe(true);
  });
});

describe('TokenSigner (docs/api.md §3.3)', () => {
  test('a token is opaque base64url text with no spaces or colons', () => {
    const t = signer.issue('jathan@example.com', 0, NOW);
    expect(t).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  test('verify accepts a fresh token for the same email and generation', () => {
    const t = signer.issue('jathan@example.com', 3, NOW);
    expect(signer.verify(t, 'jathan@example.com', 3, NOW)).toEqual({ ok: true, email: 'jathan@example.com' });
    expect(signer.verify(t, 'jathan@example.com', () => 3, NOW + 1000)).toEqual({ ok: true, email: 'jathan@example.com' });
  });

  test('verify rejects a token signed under another server key', () => {
    const t = new TokenSigner(OTHER_KEY, EXPIRY).issue('a@example.com', 0, NOW);
    expect(signer.verify(t, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  test.each([
    ['empty', ''],
    ['no dot', 'abcdef'],
    ['leading dot', '.abcdef'],
    ['trailing dot', 'abcdef.'],
    ['garbage', 'not a token at all'],
  ])('verify calls a garbled token (%s) invalid', (_name, token) => {
    expect(signer.verify(token, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  test('verify rejects a token whose payload or mac was altered', () => {
    const t = signer.issue('a@example.com', 0, NOW);
    const [payload, mac] = t.split('.');
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    expect(signer.verify(`${flip(payload)}.${mac}`, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
    expect(signer.verify(`${payload}.${flip(mac)}`, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
    expect(signer.verify(`${payload}.${mac}x`, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  test('verify accepts a token up to AUTH_TOKEN_EXPIRY seconds old and rejects it after', () => {
    const t = signer.issue('a@example.com', 0, NOW);
    expect(signer.verify(t, 'a@example.com', 0, NOW + EXPIRY * 1000)).toMatchObject({ ok: true });
    expect(signer.verify(t, 'a@example.com', 0, NOW + EXPIRY * 1000 + 1)).toEqual({ ok: false, reason: 'invalid' });
    expect(new TokenSigner(KEY, 1).verify(t, 'a@example.com', 0, NOW + 1500)).toEqual({ ok: false, reason: 'invalid' });
  });

  test('verify accepts a token stamped up to 60 s in the future and rejects one stamped later', () => {
    expect(signer.verify(signer.issue('a@example.com', 0, NOW + 60_000), 'a@example.com', 0, NOW)).toMatchObject({ ok: true });
    expect(signer.verify(signer.issue('a@example.com', 0, NOW + 61_000), 'a@example.com', 0, NOW)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  test('verify rejects a token issued before the last key rotation', () => {
    const t = signer.issue('a@example.com', 1, NOW);
    expect(signer.verify(t, 'a@example.com', 2, NOW)).toEqual({ ok: false, reason: 'invalid' });
    expect(signer.verify(t, 'a@example.com', () => 2, NOW)).toEqual({ ok: false, reason: 'invalid' });
    expect(signer.verify(t, 'a@example.com', 1, NOW)).toMatchObject({ ok: true });
  });

  test('verify checks revocation against the generation of the user the token was issued to', () => {
    const generations: Record<string, number> = { 'a@example.com': 0, 'b@example.com': 5 };
    const lookup = (e: string) => generations[e];
    // a's current token, presented with b's email: a wrong-user failure, whatever b's generation.
    expect(signer.verify(signer.issue('a@example.com', 0, NOW), 'b@example.com', lookup, NOW)).toEqual({ ok: false, reason: 'wrong-user' });
    // b's revoked token stays revoked whichever email accompanies it.
    expect(signer.verify(signer.issue('b@example.com', 4, NOW), 'a@example.com', lookup, NOW)).toEqual({ ok: false, reason: 'invalid' });
    // a token for a user that does not exist is invalid.
    expect(signer.verify(signer.issue('ghost@example.com', 0, NOW), 'a@example.com', lookup, NOW)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });

  test('verify reports a validly signed but unreadable payload as undeserializable', () => {
    for (const text of [
      'not json',
      '[1,2]',
      'null',
      '{}',
      '{"e":"a@example.com","t":"x","g":0}',
      '{"e":1,"t":1,"g":0}',
      '{"e":"a@example.com","t":1}',
    ]) {
      expect(signer.verify(signed(text), 'a@example.com', 0, NOW), text).toEqual({ ok: false, reason: 'undeserializable' });
    }
  });

  test('verify reports a token for another email as wrong-user', () => {
    const t = signer.issue('a@example.com', 0, NOW);
    expect(signer.verify(t, 'b@example.com', 0, NOW)).toEqual({ ok: false, reason: 'wrong-user' });
    expect(signer.verify(t, 'A@example.com', 0, NOW)).toEqual({ ok: false, reason: 'wrong-user' });
  });

  test('verify reports expiry before a wrong user', () => {
    const t = signer.issue('a@example.com', 0, NOW);
    expect(signer.verify(t, 'b@example.com', 0, NOW + (EXPIRY + 1) * 1000)).toEqual({ ok: false, reason: 'invalid' });
  });

  test('verify reports a bad signature before an unreadable payload', () => {
    const t = signed('not json');
    expect(signer.verify(`${t}x`, 'a@example.com', 0, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });
});
