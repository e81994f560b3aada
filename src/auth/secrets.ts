/**
 * Secret keys and auth tokens (gaps.md §3.3, §3.4).
 *
 * A token is `<payload>.<mac>`, both base64url: the payload is JSON
 * `{"e":email,"t":issued-at seconds,"g":key generation}`, the mac is
 * HMAC-SHA256 over the payload text under a 32-byte server key kept in
 * DATA_DIR. Rotating a user's secret key bumps the generation, which revokes
 * every older token.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** 32 random bytes, URL-safe base64 with padding: 44 characters ending in `=`. */
export function newSecretKey(): string {
  return randomBytes(32).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function loadServerKey(dataDir: string): Buffer {
  const path = join(dataDir, 'token-signing.key');
  if (existsSync(path)) {
    const key = readFileSync(path);
    if (key.length === 32) return key;
  }
  const key = randomBytes(32);
  writeFileSync(path, key, { mode: 0o600 });
  return key;
}

export type TokenCheck =
  | { ok: true; email: string }
  | { ok: false; reason: 'invalid' | 'undeserializable' | 'wrong-user' };

export class TokenSigner {
  constructor(private readonly key: Buffer, private readonly expirySeconds: number) {}

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  issue(email: string, generation: number, now = Date.now()): string {
    const payload = Buffer.from(JSON.stringify({ e: email, t: Math.floor(now / 1000), g: generation })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The checks after "does the user exist", in the order of gaps.md §3.3. */
  verify(token: string, email: string, generation: number, now = Date.now()): TokenCheck {
    const dot = token.indexOf('.');
    if (dot <= 0) return { ok: false, reason: 'invalid' };
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.mac(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
    let data: { e?: unknown; t?: unknown; g?: unknown };
    try { data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')); } catch { return { ok: false, reason: 'undeserializable' }; }
    if (typeof data !== 'object' || data === null || typeof data.e !== 'string' || typeof data.t !== 'number' || typeof data.g !== 'number') {
      return { ok: false, reason: 'undeserializable' };
    }
    const nowS = Math.floor(now / 1000);
    if (nowS - data.t > this.expirySeconds || data.t - nowS > 60 || data.g < generation) return { ok: false, reason: 'invalid' };
    if (data.e !== email) return { ok: false, reason: 'wrong-user' };
    return { ok: true, email };
  }
}
