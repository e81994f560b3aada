/**
 * Fixtures shared by the API tests: error expectations, unique names, and
 * creators for sites, attributes, devices and users that expect the write to
 * succeed (201) and return what the server answered.
 *
 * The creators are bound to a file's server by `fixtures(() => s)`: a getter,
 * because `s` is usually assigned in `beforeAll`, after the module has run.
 */
import { expect } from 'vitest';
import type { Response, TestServer } from './server.js';

/** What fixtures need of a server: its requests (TestServer over HTTP or InjectServer in process). */
export type ApiClient = Pick<TestServer, 'request' | 'get' | 'post' | 'put' | 'patch' | 'delete'>;

export interface Site {
  id: number;
  name: string;
  description: string;
}
export type Attrs = Record<string, string | string[]>;
export interface Device {
  id: number;
  site_id: number;
  hostname: string;
  attributes: Attrs;
}
export interface Attr {
  id: number;
  site_id: number;
  description: string;
  name: string;
  resource_name: string;
  required: boolean;
  display: boolean;
  multi: boolean;
  constraints: { allow_empty: boolean; pattern: string; valid_values: string[] };
  default: string | string[] | null;
}
export interface User {
  id: number;
  email: string;
}
export interface Change {
  id: number;
  site: Site;
  user: User;
  change_at: number;
  event: string;
  resource_name: string;
  resource_id: number;
  resource: Record<string, unknown>;
  resource_diff?: Record<string, { old: unknown; new: unknown }>;
}

export const FORBIDDEN = 'You do not have permission to perform this action.';

/** The body of an error response. */
export const err = (code: number, message: unknown) => ({ error: { code, message } });

/** An `expectError` that also checks these response headers (names in lower case). */
export function expectErrorWith(headers: Record<string, string>): (r: Response, code: number, message: unknown) => void {
  return (r, code, message) => {
    expect({ status: r.status, body: r.json }).toEqual({ status: code, body: err(code, message) });
    for (const [name, value] of Object.entries(headers)) expect(r.headers.get(name)).toBe(value);
  };
}

/** The response is exactly this error: status and body. */
export const expectError = expectErrorWith({});
/** `expectError`, and the error is served as application/json. */
export const expectJsonError = expectErrorWith({ 'content-type': 'application/json' });

let uniq = 0;
const random = (length: number) =>
  Math.random()
    .toString(36)
    .slice(2, 2 + length);

/** `base-7-k3j9xq`: unique per call; fits site names, hostnames and emails. */
export const freshDash = (base: string) => `${base}-${++uniq}-${random(6)}`;
/** `base7_k3j9x`: unique per call; a valid attribute name (^[a-z][a-z0-9_]*$) when `base` is. */
export const freshIdent = (base: string) => `${base}${++uniq}_${random(5)}`;
/** `user-7-k3j9xq@example.com`, unique per call. */
export const freshEmail = (base = 'user') => `${freshDash(base)}@example.com`;

export interface FixtureOptions {
  /** The base of `fresh()` names when none is given. */
  base?: string;
  /** How `fresh` builds names: 'dash' (`freshDash`, the default) or 'ident' (`freshIdent`). */
  names?: 'dash' | 'ident';
}

/** Creators bound to the server `server()` returns when they are called. */
export function fixtures(server: () => ApiClient, { base = 'x', names = 'dash' }: FixtureOptions = {}) {
  const make = names === 'ident' ? freshIdent : freshDash;
  /** A unique name, see `FixtureOptions`. */
  const fresh = (b = base) => make(b);

  /** POST that must answer 201; the created record. */
  async function created<T>(path: string, body: unknown): Promise<T> {
    const r = await server().post(path, body);
    expect(r.status, r.text).toBe(201);
    return r.json;
  }

  /** A site; the description is sent only when given. */
  const mkSite = (name = fresh('site'), description?: string) =>
    created<Site>('/api/sites/', description === undefined ? { name } : { name, description });
  const mkSiteId = async (name?: string) => (await mkSite(name)).id;

  /** Two fresh sites whose ids have the same parity (`sameShard`) or not: with SHARDS=2, one shard or two. */
  async function sitePair(sameShard: boolean): Promise<[Site, Site]> {
    const a = await mkSite();
    let b = await mkSite();
    while ((b.id % 2 === a.id % 2) !== sameShard) b = await mkSite();
    return [a, b];
  }
  /** Two sites whose ids differ in parity, so they live on different shards (SHARDS=2). */
  const sitesOnTwoShards = () => sitePair(false);
  /** Two sites with ids of the same parity, so they share a shard (SHARDS=2). */
  const sitesOnOneShard = () => sitePair(true);
  const siteIdsOnTwoShards = async (): Promise<[number, number]> => {
    const [a, b] = await sitesOnTwoShards();
    return [a.id, b.id];
  };

  /** A Device attribute (`extra` may change resource_name). */
  const mkAttr = (site: number, name: string, extra: Record<string, unknown> = {}) =>
    created<Attr>(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', ...extra });
  const mkAttrId = async (site: number, name: string, extra: Record<string, unknown> = {}) => (await mkAttr(site, name, extra)).id;
  /** An attribute from a whole body (name included); resource_name defaults to Device. */
  const mkAttrFrom = (site: number, body: Record<string, unknown>) =>
    created<Attr>(`/api/sites/${site}/attributes/`, { resource_name: 'Device', ...body });

  /** A device; `attributes` is sent only when given (it may be any JSON value). */
  const mkDevice = (site: number, hostname = fresh('h'), attributes?: unknown) =>
    created<Device>(`/api/sites/${site}/devices/`, attributes === undefined ? { hostname } : { hostname, attributes });
  /** `mkDevice` with the attributes first. */
  const mkDeviceWith = (site: number, attributes?: unknown, hostname = fresh('h')) => mkDevice(site, hostname, attributes);

  /** A non-superuser created through POST /api/users/, with these site grants if any. */
  async function mkUserRecord(email = freshEmail(), grants: Record<string, string[]> = {}): Promise<User> {
    const { id } = await created<User>('/api/users/', { email });
    if (Object.keys(grants).length > 0) {
      const p = await server().patch(`/api/users/${id}/`, { permissions: grants });
      expect(p.status, p.text).toBe(200);
    }
    return { id, email };
  }
  /** `mkUserRecord` with a fresh email; the email. */
  const mkUser = async (grants: Record<string, string[]> = {}) => (await mkUserRecord(undefined, grants)).email;

  /** The site's Device Changes, oldest first. */
  async function deviceChanges(site: number): Promise<Change[]> {
    const r = await server().get(`/api/sites/${site}/changes/?resource_name=Device`);
    expect(r.status, r.text).toBe(200);
    return (r.json as Change[]).slice().reverse();
  }

  return {
    fresh,
    mkSite,
    mkSiteId,
    sitesOnTwoShards,
    sitesOnOneShard,
    siteIdsOnTwoShards,
    mkAttr,
    mkAttrId,
    mkAttrFrom,
    mkDevice,
    mkDeviceWith,
    mkUserRecord,
    mkUser,
    deviceChanges,
  };
}

// ---- networks ----

export interface Net {
  id: number;
  cidr: string;
  parent_id: number | null;
  parent: string | null;
  site_id: number;
  is_ip: boolean;
  ip_version: string;
  network_address: string;
  prefix_length: number;
  state: string;
  attributes: Attrs;
}

/** The canonical Network shape (keys in §20.1 order) for a displayed cidr. */
export function netShape(
  id: number,
  site: number,
  cidr: string,
  parent: Pick<Net, 'id' | 'cidr'> | null = null,
  over: Partial<Net> = {},
): Net {
  const slash = cidr.lastIndexOf('/');
  const addr = cidr.slice(0, slash);
  const len = Number(cidr.slice(slash + 1));
  const v6 = addr.includes(':');
  return {
    id,
    cidr,
    parent_id: parent?.id ?? null,
    parent: parent?.cidr ?? null,
    site_id: site,
    is_ip: len === (v6 ? 128 : 32),
    ip_version: v6 ? '6' : '4',
    network_address: addr,
    prefix_length: len,
    state: 'allocated',
    attributes: {},
    ...over,
  };
}

/** Exact status and exact body text (so key order counts). */
export function expectBody(r: Response, status: number, body: unknown): void {
  expect({ status: r.status, text: r.text }).toEqual({ status, text: JSON.stringify(body) });
}
