/**
 * Authentication (docs/api.md §3): picks the method per request, checks it, and
 * issues tokens at POST /api/authenticate/. Runs on the main thread, which
 * owns the users.
 */

import type { Config } from '../config.js';
import { Errors, pyType } from '../errors.js';
import type { UserDirectory } from '../model/user.js';
import type { ErrorMessage } from '../types/api.js';
import type { UserRecord } from '../types/stored.js';
import { isValidEmail, MAX_EMAIL_LENGTH } from './email.js';
import { sameSecret, type TokenSigner } from './secrets.js';

export interface AuthHeaders {
  authorization: string;
  email: string | undefined;
}

/** The `Authorization` value in AuthToken's scheme (compared case-insensitively), split on whitespace; null for any other. */
function tokenParts(authorization: string): string[] | null {
  const auth = authorization.trim();
  if (auth === '') return null;
  const parts = auth.split(/\s+/);
  return parts[0].toLowerCase() === 'authtoken' ? parts : null;
}

/** The request carries credentials of a scheme this server reads (a token, or the user header); else it is a 401. */
export const offersCredentials = (h: AuthHeaders): boolean => tokenParts(h.authorization) !== null || h.email !== undefined;

export class Authenticator {
  constructor(
    private readonly users: UserDirectory,
    private readonly signer: TokenSigner,
    private readonly config: Config,
    /** Whether this node writes user records: false on a cluster's standby (README, Past one machine). */
    private readonly mayCreate: () => boolean = () => true,
  ) {}

  /**
   * The caller, or an ApiError. `verifyRoute`: only tokens count, and token checks answer 400. A user the header
   * names for the first time is created, or, where this node may not write, is a passing caller with no record:
   * it can read, and its writes are refused as any write there is.
   */
  async authenticate(h: AuthHeaders, verifyRoute = false): Promise<UserRecord> {
    return this.userOf(this.identify(h, verifyRoute));
  }

  /** The user `identify` named: a known one, or one it named by email for the first time, created as `authenticate` says. */
  async userOf(who: UserRecord | string): Promise<UserRecord> {
    if (typeof who !== 'string') return who;
    const superuser = this.config.newUsersAsSuperuser;
    return this.mayCreate() ? this.users.create(who, superuser) : this.users.unsaved(who, superuser);
  }

  /**
   * The caller, at once: a known user, or the email of a user the header names for the first time (whom
   * `authenticate` creates); an ApiError when the credentials do not pass.
   */
  identify(h: AuthHeaders, verifyRoute = false): UserRecord | string {
    const parts = tokenParts(h.authorization);
    if (parts) return this.byToken(parts, verifyRoute);
    if (verifyRoute || h.email === undefined) throw Errors.notAuthenticated();
    const email = h.email.trim();
    // Every user's email passed the rule when the user was made, so a known one needs no second look.
    const known = this.users.byEmailAddress(email);
    if (known) return known;
    if (email.length > MAX_EMAIL_LENGTH) throw Errors.emailHeaderTooLong(MAX_EMAIL_LENGTH);
    if (!isValidEmail(email)) throw Errors.invalidEmailHeader();
    return email;
  }

  private byToken(parts: string[], verifyRoute: boolean): UserRecord {
    if (parts.length === 1) throw Errors.authFailed('Invalid token header. No credentials provided.');
    if (parts.length > 2) throw Errors.authFailed('Invalid token header. Token should not contain spaces.');
    const credential = parts[1];
    const colon = credential.indexOf(':');
    if (colon < 0) throw Errors.authFailed('Invalid token header. Credentials must be in the form <email>:<auth_token>.');
    const email = credential.slice(0, colon);
    const token = credential.slice(colon + 1);
    const fail = (message: ErrorMessage) => Errors.authFailed(message, verifyRoute ? 400 : 401);
    const user = this.users.byEmailAddress(email);
    if (!user) throw fail({ auth_token: 'Invalid user when verifying token' });
    const check = this.signer.verify(token, email, (e) => this.users.byEmailAddress(e)?.keyGeneration);
    if (!check.ok) {
      if (check.reason === 'undeserializable') throw fail({ auth_token: 'Token could not be deserialized.' });
      if (check.reason === 'wrong-user') throw fail({ auth_token: 'Invalid user when deserializing.' });
      throw fail({ auth_token: 'Invalid/expired auth_token.' });
    }
    return user;
  }

  /** POST /api/authenticate/: `{email, secret_key}` → `{auth_token}`. */
  login(body: unknown): { auth_token: string } {
    if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      throw Errors.authFailed({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${pyType(body)}.`] });
    }
    const b = (body ?? {}) as Record<string, unknown>;
    const errors: Record<string, string[]> = {};
    const read = (name: string): string => {
      const v = b[name];
      if (v === undefined) {
        errors[name] = ['This field is required.'];
        return '';
      }
      if (v === null) {
        errors[name] = ['This field may not be null.'];
        return '';
      }
      if (typeof v !== 'string' && typeof v !== 'number') {
        errors[name] = ['Not a valid string.'];
        return '';
      }
      const s = String(v).trim();
      if (s === '') errors[name] = ['This field may not be blank.'];
      return s;
    };
    const email = read('email');
    const secret = read('secret_key');
    if (Object.keys(errors).length > 0) throw Errors.authFailed(errors);
    const user = this.users.byEmailAddress(email);
    if (!user || !sameSecret(user.secretKey, secret)) throw Errors.authFailed('Invalid email/secret_key');
    return { auth_token: this.signer.issue(user.email, user.keyGeneration) };
  }
}
