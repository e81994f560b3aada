/**
 * Several real netsot servers (from dist/) on one embedded PostgreSQL, for
 * the failover tests (README, Past one machine), and the write load they run
 * under: allocations with reserve=true and bulk device creates, sent through
 * every node, each acknowledged write recorded.
 */
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { queryOnce, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import type { Response, TestServer as Server } from '../helpers/server.js';
import { TestServer } from '../helpers/server.js';

/** Short, so takeovers happen within a test's patience; renewed every third of it. */
export const LEASE_MS = 1500;

export interface ClusterFile {
  /** A fresh database's URL. */
  database(): Promise<string>;
  /** A node on `url`, stopped after the case. */
  node(url: string, nodeId: string, shards?: number, env?: Record<string, string>): Promise<Server>;
  /** Stops PostgreSQL, waits `downMs`, and starts it again on the same files. */
  restartDatabase(downMs: number): Promise<void>;
}

/**
 * A test file's cluster: one embedded PostgreSQL for all its cases (each takes a fresh database), and the nodes a
 * case starts with `node`, stopped (resumed first, if paused) after it.
 */
export function clusterFile(): ClusterFile {
  let server: TestPostgres;
  const nodes: Server[] = [];
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterEach(async () => {
    for (const n of nodes.splice(0)) {
      if (n.proc.signalCode === 'SIGSTOP') n.proc.kill('SIGCONT');
      await n.stop();
    }
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  }, 60_000);
  return {
    database: () => server.freshDatabase(),
    restartDatabase: (downMs) => server.restart(downMs),
    async node(url, nodeId, shards = 1, env = {}) {
      const n = await startNode(url, nodeId, shards, env);
      nodes.push(n);
      return n;
    },
  };
}

export function startNode(url: string, nodeId: string, shards = 1, env: Record<string, string> = {}, port?: number): Promise<Server> {
  return TestServer.start({ shards, port, env: { NETSOT_STORE: url, NODE_ID: nodeId, LEASE_TIMEOUT_MS: String(LEASE_MS), ...env } });
}

/** One query on the database the nodes share. */
export async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  return (await queryOnce(url, sql)).rows as R[];
}

/** Waits until `node` says it has applied every commit the database holds now. */
export async function caughtUp(node: Server, url: string, withinMs = 15_000): Promise<void> {
  const [{ seq }] = await query<{ seq: string }>(url, 'SELECT seq FROM lease WHERE id = 1');
  await eventually(
    async () =>
      Number((await tryRequest(node, 'GET', '/api/', undefined, { timeoutMs: 2000 }))?.headers.get('x-netsot-applied')) >= Number(seq),
    withinMs,
  );
}

/** Where the load sends requests: a node, or a proxy in front of nodes (proxies.test.ts). */
export interface Endpoint {
  request: Server['request'];
  /** A proxy's name, for the log of requests that got no answer. */
  name?: string;
  /** A node's process: while it has exited or is stopped, its clients back off a little instead of spinning. */
  proc?: Server['proc'];
}

/** A request that answers null where the node is gone or paused past `timeoutMs` instead of throwing. */
export async function tryRequest(
  node: Endpoint,
  method: string,
  path: string,
  body?: unknown,
  { timeoutMs = 20_000, unanswered }: { timeoutMs?: number; unanswered?: (why: string) => void } = {},
): Promise<Response | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      node.request(method, path, body === undefined ? { headers: { 'Content-Type': 'application/json' } } : { body }),
      new Promise<null>((ok) => {
        timer = setTimeout(() => {
          unanswered?.(`no answer within ${timeoutMs} ms`);
          ok(null);
        }, timeoutMs);
      }),
    ]);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    unanswered?.(`${(err as Error).message}${cause ? `: ${cause.code ?? ''} ${cause.message ?? ''}` : ''}`);
    return null;
  } finally {
    clearTimeout(timer);
  }
}

export async function roleOf(node: Server): Promise<string | null> {
  const r = await tryRequest(node, 'GET', '/api/', undefined, { timeoutMs: 2000 });
  return r?.headers.get('x-netsot-role') ?? null;
}

/** Waits until `node` says it is `role`; answers the milliseconds it took. */
export async function waitForRole(node: Server, role: 'leader' | 'standby', withinMs = 15_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if ((await roleOf(node)) === role) return Date.now() - started;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`node did not become ${role} within ${withinMs} ms`);
}

/** Waits until `check` passes on `node` (a standby catching up). */
export async function eventually(check: () => Promise<boolean>, withinMs = 10_000): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if (await check()) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`not reached within ${withinMs} ms`);
}

export interface Site {
  id: number;
  parent: string;
}

export async function makeSite(leader: Pick<Server, 'post'>, name: string): Promise<Site> {
  const site = await leader.post('/api/sites/', { name });
  expect(site.status).toBe(201);
  const parent = await leader.post(`/api/sites/${site.json.id}/networks/`, { cidr: '10.0.0.0/8' });
  expect(parent.status).toBe(201);
  return { id: site.json.id, parent: '10.0.0.0/8' };
}

/** What the load got acknowledged, and what it was refused. */
export class Load {
  readonly addresses: string[] = [];
  readonly devices: string[] = [];
  /** Status and message of every refusal, counted. */
  readonly refusals = new Map<string, number>();
  /** performance.now() of each acknowledged write, with the node that acknowledged it. */
  readonly acks: { at: number; node: Endpoint }[] = [];
  /** Each request that got no answer: when (ms since the load started), where, and the client's error. */
  readonly unanswered: string[] = [];
  readonly startedAt = performance.now();
  private stopped = false;
  private running: Promise<void>[] = [];
  private bulks = 0;

  constructor(
    private readonly site: Site,
    private readonly nodes: Endpoint[],
  ) {}

  start(clients: number): void {
    this.running = Array.from({ length: clients }, (_, i) => this.client(i));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  get acknowledged(): number {
    return this.addresses.length + this.devices.length;
  }

  ackedBy(node: Endpoint, after = 0): number {
    return this.acks.filter((a) => a.node === node && a.at > after).length;
  }

  private async client(i: number): Promise<void> {
    let turn = i;
    while (!this.stopped) {
      const node = this.nodes[turn++ % this.nodes.length];
      const unanswered = (why: string) =>
        this.unanswered.push(`${Math.round(performance.now() - this.startedAt)} ms ${node.name ?? 'node'} client ${i}: ${why}`);
      if (turn % 4 === 0) {
        const names = Array.from({ length: 3 }, () => `d${i}-${++this.bulks}`);
        const r = await tryRequest(
          node,
          'POST',
          `/api/sites/${this.site.id}/devices/`,
          names.map((hostname) => ({ hostname })),
          { unanswered },
        );
        if (r?.status === 201) {
          this.devices.push(...names);
          this.acks.push({ at: performance.now(), node });
        } else this.refused(r);
      } else {
        const r = await tryRequest(
          node,
          'POST',
          `/api/sites/${this.site.id}/networks/${this.site.parent}/next_address/?reserve=true`,
          undefined,
          { unanswered },
        );
        if (r?.status === 200) {
          this.addresses.push((r.json as string[])[0]);
          this.acks.push({ at: performance.now(), node });
        } else this.refused(r);
      }
      if (!r200(node)) await new Promise((ok) => setTimeout(ok, 20));
    }
  }

  private refused(r: Response | null): void {
    const key = r === null ? 'no answer' : `${r.status} ${(r.json as { error?: { message?: string } })?.error?.message}`;
    this.refusals.set(key, (this.refusals.get(key) ?? 0) + 1);
  }
}

/** A node that has exited or is stopped answers nothing; its clients back off a little instead of spinning. */
function r200(node: Endpoint): boolean {
  return node.proc === undefined || (node.proc.exitCode === null && node.proc.signalCode === null);
}

/**
 * Checks, through `reader`, that every acknowledged write is stored, that no address was handed out twice, and that
 * the site's Changes are 1:1 with the writes stored: one Create per network and per device, none for anything
 * else. Answers how many stored writes were never acknowledged (in flight when a node died: at most one per client).
 */
export async function checkStored(reader: Server, site: Site, load: Load): Promise<number> {
  expect(new Set(load.addresses).size).toBe(load.addresses.length);
  const nets = await reader.get(`/api/sites/${site.id}/networks/?fields=id,cidr`);
  expect(nets.status).toBe(200);
  const networks = (nets.json as { id: number; cidr: string }[]).filter((n) => n.cidr !== site.parent);
  const cidrs = networks.map((n) => n.cidr.replace(/\/32$/, ''));
  expect(new Set(cidrs).size).toBe(cidrs.length);
  const storedAddresses = new Set(cidrs);
  expect(load.addresses.filter((a) => !storedAddresses.has(a.replace(/\/32$/, '')))).toEqual([]);

  const devs = await reader.get(`/api/sites/${site.id}/devices/?fields=id,hostname`);
  expect(devs.status).toBe(200);
  const devices = devs.json as { id: number; hostname: string }[];
  const storedDevices = new Set(devices.map((d) => d.hostname));
  expect(load.devices.filter((d) => !storedDevices.has(d))).toEqual([]);

  const ch = await reader.get(`/api/sites/${site.id}/changes/`);
  expect(ch.status).toBe(200);
  const changes = ch.json as { event: string; resource_name: string; resource_id: number }[];
  const created = (name: string) =>
    changes
      .filter((c) => c.resource_name === name && c.event === 'Create')
      .map((c) => c.resource_id)
      .sort((a, b) => a - b);
  // The parent network was created through the API too: one Create each.
  const parent = (nets.json as { id: number; cidr: string }[]).find((n) => n.cidr === site.parent)!;
  expect(created('Network')).toEqual([parent.id, ...networks.map((n) => n.id)].sort((a, b) => a - b));
  expect(created('Device')).toEqual(devices.map((d) => d.id).sort((a, b) => a - b));
  expect(changes.filter((c) => c.event !== 'Create')).toEqual([]);
  return networks.length + devices.length - load.acknowledged;
}

/** The commit log as the database holds it: per epoch, how many commits and the highest and lowest seq. */
export async function commitsByEpoch(url: string): Promise<Map<number, { count: number; min: number; max: number }>> {
  const rows = await query<{ epoch: string; count: string; min: string; max: string }>(
    url,
    'SELECT epoch, count(*) AS count, min(seq) AS min, max(seq) AS max FROM commit_log GROUP BY epoch ORDER BY epoch',
  );
  return new Map(rows.map((r) => [Number(r.epoch), { count: Number(r.count), min: Number(r.min), max: Number(r.max) }]));
}
