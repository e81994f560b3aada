/** Helpers for the streamed-list tests (real HTTP against a TestServer). */
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import type { TestServer } from './server.js';

const AUTH = { 'X-Service-Email': 'admin@localhost' };

/** A server these helpers talk to: a TestServer, or an InjectServer. */
type Gettable = Pick<TestServer, 'get'>;
type Client = Pick<TestServer, 'get' | 'post'>;

/**
 * Two sites on two shards (a site's shard is its id modulo the shard count), site n holding the base network
 * `1<n>.0.0.0/8` and `perSite` hosts under it, POSTed in lists of `batch` that alternate between the sites, so
 * ids (and Changes) interleave across the shards and a top-level merge must weave them. The sites' ids.
 */
export async function twoSitesOfHosts(s: Client, names: [string, string], perSite: number, batch: number): Promise<number[]> {
  const sites: number[] = [];
  const created = async (res: Promise<{ status: number; text: string }>) => {
    const r = await res;
    if (r.status !== 201) throw new Error(`a fill POST answered ${r.status}: ${r.text.slice(0, 200)}`);
    return r;
  };
  for (const [n, name] of names.entries()) {
    sites.push(JSON.parse((await created(s.post('/api/sites/', { name }))).text).id);
    await created(s.post(`/api/sites/${sites[n]}/networks/`, { cidr: `${10 + n}.0.0.0/8` }));
  }
  if (sites[0] % 2 === sites[1] % 2) throw new Error(`sites ${sites} are on one shard`);
  for (let b = 0; b < perSite / batch; b++) {
    for (const [n, site] of sites.entries()) {
      const hosts = Array.from({ length: batch }, (_, i) => {
        const k = b * batch + i;
        return { cidr: `${10 + n}.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}/32` };
      });
      await created(s.post(`/api/sites/${site}/networks/`, hosts));
    }
  }
  return sites;
}

/** One sample's value from the server's /metrics. */
export async function metric(s: Gettable, name: string): Promise<number> {
  const text = (await s.get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

/** GET `url` as the admin over node:http, resolving as soon as the response head arrives (the body is the caller's to read). */
export function openGet(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: AUTH }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** `method` on `url` as the admin over one keep-alive connection of `agent`: status, headers and body. */
export function onConnection(
  agent: Agent,
  method: string,
  url: string,
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent, headers: AUTH }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A keep-alive agent holding one connection, for requests that must share it. */
export const oneConnection = () => new Agent({ keepAlive: true, maxSockets: 1 });

/** The server process's resident memory, in bytes. */
export function rss(s: TestServer): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/**
 * A JSON array's items, each as its own text. The array must be exactly what JSON.stringify makes of its parse
 * (no spaces, no escapes written otherwise), so each text is the server's own bytes for that item.
 */
export function itemTexts(list: string): string[] {
  const texts = (JSON.parse(list) as unknown[]).map((item) => JSON.stringify(item));
  if (`[${texts.join(',')}]` !== list) throw new Error('the list is not in the form JSON.stringify writes: its items cannot be cut out');
  return texts;
}

/** A page as docs/api.md §7.1 writes it (keys in that order), around items' texts. */
export function envelope(count: number, next: string | null, previous: string | null, items: string[]): string {
  return `{"count":${count},"next":${JSON.stringify(next)},"previous":${JSON.stringify(previous)},"results":[${items.join(',')}]}`;
}

/**
 * The page `?limit=<limit>&offset=<offset>` of `url` (a query of those two alone) as docs/api.md §7.1 writes it:
 * its count, next and previous links, and the items it shows of `items`, the whole list's.
 */
export function expectedPage(url: string, items: string[], limit: number, offset: number): string {
  const count = items.length;
  const next = offset + limit >= count ? null : `${url}?limit=${limit}&offset=${offset + limit}`;
  const previous = offset <= 0 ? null : offset - limit <= 0 ? `${url}?limit=${limit}` : `${url}?limit=${limit}&offset=${offset - limit}`;
  return envelope(count, next, previous, items.slice(offset, offset + limit));
}

/** The `results` array of an envelope, as text. */
export function resultsText(envelopeText: string): string {
  const at = envelopeText.indexOf('"results":');
  if (at < 0 || !envelopeText.endsWith('}')) throw new Error(`not a page envelope: ${envelopeText.slice(0, 200)}`);
  return envelopeText.slice(at + '"results":'.length, -1);
}

/** Where two bodies first differ, with some context, or null when they are the same bytes (a diff of 10 MB would not be readable). */
export function firstDifference(a: string, b: string): string | null {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `lengths ${a.length} and ${b.length}, first difference at ${i}: ${JSON.stringify(a.slice(i - 40, i + 60))} vs ${JSON.stringify(b.slice(i - 40, i + 60))}`;
}

/** A client that stops reading a streamed GET after its first bytes: `resume` reads the rest and gives the whole body. */
export async function pausedGet(url: string): Promise<{ status: number; resume: () => Promise<string> }> {
  const res = await openGet(url);
  const parts: Buffer[] = [];
  res.pause();
  return {
    status: res.statusCode ?? 0,
    resume: () => {
      res.on('data', (d: Buffer) => parts.push(d));
      const ended = new Promise((r) => res.on('end', r));
      res.resume();
      return ended.then(() => Buffer.concat(parts).toString('utf8'));
    },
  };
}

/** A client that reads the first bytes of a streamed GET and goes away. */
export async function abandonedGet(url: string): Promise<void> {
  const res = await openGet(url);
  await new Promise((r) => res.once('data', r));
  res.destroy();
}

/** Polls the open-streams gauge until it reads `want` (or 2 s pass); its last reading. */
export async function streamsOpen(s: Gettable, want: number): Promise<number> {
  let open = await metric(s, 'netsot_list_streams_open');
  for (let i = 0; i < 40 && open !== want; i++) {
    await sleep(50);
    open = await metric(s, 'netsot_list_streams_open');
  }
  return open;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
