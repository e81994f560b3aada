/**
 * A store URL taken apart (pg-connect.ts connects with it): libpq's host list,
 * `postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write`, which
 * node-postgres's own parser refuses. Checked when the settings are read
 * (config.ts), so a malformed list stops start-up with a line naming what is wrong.
 */

export interface HostPort {
  host: string;
  port: number;
}

/** A store URL taken apart: its hosts in order, and the URL node-postgres is given (first host, no list). */
export interface StoreAddress {
  hosts: HostPort[];
  single: string;
}

/** What `target_session_attrs` may say: netsot looks for the read-write primary in each case. */
const SESSION_ATTRS = new Set(['read-write', 'primary', 'any']);
const DEFAULT_PORT = 5432;

export class StoreUrlError extends Error {}

/** Splits `url`'s host list (libpq syntax); the messages never repeat the URL, which may hold a password. */
export function parseStoreUrl(url: string): StoreAddress {
  const m = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(\?[^#]*)?$/.exec(url);
  if (!m) throw new StoreUrlError('STORE must be a postgres:// URL: postgres://user:password@host[:port][,host[:port]…]/database');
  const [, scheme, userinfo, hostList, path, search] = m;
  const params = new URLSearchParams(search ?? '');
  const attrs = params.get('target_session_attrs');
  if (attrs !== null && !SESSION_ATTRS.has(attrs))
    throw new StoreUrlError(`target_session_attrs=${attrs} is not served: netsot writes, so it needs the read-write primary (read-write)`);
  params.delete('target_session_attrs');
  const hosts = hostList === '' ? [] : hostList.split(',').map(hostPort);
  const rest = `${path}${params.size > 0 ? `?${params}` : ''}`;
  const first = hosts.length > 0 ? hostText(hosts[0]) : '';
  return { hosts, single: `${scheme}${userinfo !== undefined ? `${userinfo}@` : ''}${first}${rest}` };
}

function hostPort(item: string): HostPort {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(item);
  const port = m?.[2] === undefined ? DEFAULT_PORT : Number(m[2]);
  if (!m || port < 1 || port > 65535) throw new StoreUrlError(`STORE names a host that is not host[:port]: '${item}'`);
  return { host: m[1].startsWith('[') ? m[1].slice(1, -1) : m[1], port };
}

export const hostText = (h: HostPort): string => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;
