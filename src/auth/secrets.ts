/**
 * Secret keys and auth tokens (docs/api.md §3.3, §3.4).
 *
 * A token is `<payload>.<mac>`, both base64url: the payload is JSON
 * `{"e":email,"t":issued-at milliseconds,"g":key generation}`, the mac is
 * HMAC-SHA256 over the payload text under a 32-byte server key kept in
 * DATA_DIR. Rotating a user's secret key bumps the generation, which revokes
 * every older token.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writePrivateFile } from '../store/data-dir.js';

/** 32 random bytes, URL-safe base64 with padding: 44 characters ending in `=`. */
export function newSecretKey(): string {
  return randomBytes(32).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** Constant-time comparison: both sides are hashed first, so neither content nor length leaks. */
export function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a, 'utf8').digest();
  const y = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(x, y) && a === b;
}

export const SERVER_KEY_FILE = 'token-signing.key';

export function loadServerKey(dataDir: string): Buffer {
  const path = join(dataDir, SERVER_KEY_FILE);
  if (existsSync(path)) {
    const key = readFileSync(path);
    if (key.length === 32) return key;
  }
  const key = randomBytes(32);
  writePrivateFile(path, key);
  return key;
}

export type TokenCheck = { ok: true; email: string } | { ok: false; reason: 'invalid' | 'undeserializable' | 'wrong-user' };

/** The current key generation of the user with this email; undefined when there is none. */
export type GenerationOf = (email: string) => number | undefined;

/** Tokens stamped further than this into the future are refused. */
export const MAX_FUTURE_MS = 60_000;

export class TokenSigner {
  constructor(
    private readonly key: Buffer,
    private readonly expirySeconds: number,
  ) {}

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(payload).digest('base64url');
  }

  /** Signs an arbitrary payload text (already base64url); `issue` is the normal way in. */
  sign(payload: string): string {
    return `${payload}.${this.mac(payload)}`;
  }

  issue(email: string, generation: number, now = Date.now()): string {
    return this.sign(Buffer.from(JSON.stringify({ e: email, t: Math.floor(now), g: generation })).toString('base64url'));
  }

  /**
   * The checks after "does the user exist", in the order of docs/api.md §3.3:
   * signature, readability, age, revocation (against the generation of the
   * user the token was issued to), then the email of the header.
   * `generation` is that user's current generation, or a lookup by email.
   */
  verify(token: string, email: string, generation: number | GenerationOf, now = Date.now()): TokenCheck {
    const dot = token.indexOf('.');
    if (dot <= 0) return { ok: false, reason: 'invalid' };
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.mac(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
    let data: { e?: unknown; t?: unknown; g?: unknown };
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'undeserializable' };
    }
    if (
      typeof data !== 'object' ||
      data === null ||
      Array.isArray(data) ||
      typeof data.e !== 'string' ||
      typeof data.t !== 'number' ||
      !Number.isFinite(data.t) ||
      typeof data.g !== 'number' ||
      !Number.isInteger(data.g)
    ) {
      return { ok: false, reason: 'undeserializable' };
    }
    if (now - data.t > this.expirySeconds * 1000 || data.t - now > MAX_FUTURE_MS) return { ok: false, reason: 'invalid' };
    const current = typeof generation === 'number' ? generation : generation(data.e);
    if (current === undefined || data.g < current) return { ok: false, reason: 'invalid' };
    if (data.e !== email) return { ok: false, reason: 'wrong-user' };
    return { ok: true, email };
  }
}
