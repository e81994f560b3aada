/**
 * Soak (issue 15): kill -9 rounds under mixed write load. `npm run soak`
 * (= `npm run bench -- soak`), options after `--`, e.g. `npm run soak -- --rounds=20`.
 *
 * One data dir for the whole run. Each round: the real server (child
 * process, `--shards N`) serves that dir; C concurrent clients (keep-alive
 * fetch) write to it over HTTP for a random number of seconds; then the
 * server is SIGKILLed (no shutdown code runs) while requests are still in
 * flight, restarted on the same dir, and everything the run ever wrote is
 * checked through the API. The writes, over S sites (so over the shards):
 * single POSTs of devices and networks, POSTs of lists of 50–500 of them,
 * PATCHes of the `soak` attribute (singly and as lists), DELETEs (singly and
 * as lists of ids), and `next_address` / `next_network` with `reserve=true`.
 *
 * The model: every object is named by a key never reused (hostname or /29),
 * and every PATCH writes a value unique to the request, so after a restart
 * each write is either visibly applied or visibly not. A write whose 2xx
 * arrived must be applied; a write in flight at the kill may go either way,
 * but a list (create, update or delete) must go all the way or not at all.
 * Objects being written are not picked by another client until the answer
 * is in, so one write at most per object is in doubt at a kill; the check
 * after the restart settles it, and the next round starts from certainty.
 *
 * Checked after every restart (a violation makes the exit code 1):
 * - lost: an acknowledged create, update or delete not in effect (object
 *   missing, value not the last acknowledged one, deleted object present);
 *   an acknowledged allocation missing or not `reserved`;
 * - partial bulks: a list in flight at the kill that is neither wholly
 *   applied nor wholly absent;
 * - duplicates: an allocation handing out an address or prefix that an
 *   earlier allocation (acknowledged, or found stored after a kill) holds;
 * - Changes: per object exactly [Create, Update × persisted updates,
 *   Delete if deleted] in id order, Create carrying the created content and
 *   the newest non-Delete Change the current value; every Change of a site
 *   belongs to such an object (none for a create that did not persist).
 *   After each round the Changes written since the last check are held to
 *   the events each object gained; after the last round all of them, whole;
 * - unexpected objects (stored but never sent, or refused; allocations stored
 *   beyond what the requests in flight at the kill asked for) and unexpected
 *   replies (any non-2xx, a 2xx whose body does not match the request, a
 *   request failing before the kill);
 * - the restarted server serves (`GET /api/sites/` lists every site).
 * Restart times (spawn to listening) are printed with a baseline: the same
 * server starting on an empty data dir, before the first round and after the
 * last, and on the final data after a graceful stop (SIGTERM).
 *
 * Options (`--name=value`, or env SOAK_<NAME>): rounds (10), seconds of load
 * per round before the kill, `MIN-MAX` drawn per round (2-6), connections
 * (16), shards (2), sites (4), seed (1; the PRNG of test/helpers/prng.ts
 * draws round lengths, operations, sites, list sizes and victims).
 */
import { prng } from '../test/helpers/prng.js';
import { AUTH, type ChildServer, fmt, log, machine, type Reply, request, startNetsot, stats, table, tempDir } from './_harness.js';

// ---------------------------------------------------------------- options

interface Options {
  rounds: number;
  minSeconds: number;
  maxSeconds: number;
  connections: number;
  shards: number;
  sites: number;
  seed: number;
}

function parseOptions(args: string[]): Options {
  const given = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(args[i]);
    if (!m) {
      throw new Error(`soak: unexpected argument '${args[i]}'; options are --rounds, --seconds, --connections, --shards, --sites, --seed`);
    }
    given.set(m[1], m[2] ?? args[++i] ?? '');
  }
  const raw = (name: string) => {
    const v = given.get(name) ?? process.env[`SOAK_${name.toUpperCase()}`];
    given.delete(name);
    return v === undefined || v === '' ? undefined : v;
  };
  const int = (name: string, fallback: number, min: number, max: number) => {
    const v = raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`soak: --${name} must be an integer from ${min} to ${max}, got '${v}'`);
    return n;
  };
  const rounds = int('rounds', 10, 1, 10_000);
  const connections = int('connections', 16, 1, 1024);
  const shards = int('shards', 2, 1, 64);
  const sites = int('sites', 4, 1, 100);
  const seed = int('seed', 1, 0, 2 ** 32 - 1);
  const secs = raw('seconds') ?? '2-6';
  const m = /^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(secs);
  const minSeconds = m ? Number(m[1]) : NaN;
  const maxSeconds = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(minSeconds > 0 && maxSeconds >= minSeconds)) {
    throw new Error(`soak: --seconds must be S or MIN-MAX with 0 < MIN <= MAX, got '${secs}'`);
  }
  if (given.size > 0) throw new Error(`soak: unknown option --${[...given.keys()][0]}`);
  return { rounds, minSeconds, maxSeconds, connections, shards, sites, seed };
}

// ---------------------------------------------------------------- model

type Kind = 'device' | 'network';
/** Whether a create or delete is in effect: known yes, known no, or in doubt (in flight at a kill). */
type Known = 'yes' | 'no' | 'maybe';

interface Obj {
  kind: Kind;
  site: SiteModel;
  /** hostname or cidr; never reused within a run. */
  key: string;
  /** The `soak` attribute value sent with the create. */
  initial: string;
  /** 0 until an acknowledgement or a listing tells. */
  id: number;
  created: Known;
  deleted: Known;
  /** The `soak` value known to be stored. */
  value: string;
  /** Update Changes expected: acknowledged PATCHes plus those in doubt found applied. */
  updates: number;
}

interface AllocParent {
  what: 'next_address' | 'next_network';
  cidr: string;
  /** Leading text every child's cidr has and no other network of the site has. */
  prefix: string;
  path: string;
  id: number;
  /** Every child that must be stored: acknowledged, or found stored after a kill. */
  held: Set<string>;
  /** Children that requests in doubt may have stored (sum of their `num`). */
  maybe: number;
}

interface SiteModel {
  id: number;
  /** Setup objects (Attribute and parent Network ids) whose only Change is their Create. */
  setup: { resource: string; id: number }[];
  objects: Record<Kind, Map<string, Obj>>;
  /** Objects known to exist and not being written: what PATCH and DELETE pick from. */
  idle: Record<Kind, Obj[]>;
  alloc: AllocParent[];
}

const OPS = [
  { name: 'POST device', weight: 20 },
  { name: 'POST network', weight: 14 },
  { name: 'POST device list', weight: 2 },
  { name: 'POST network list', weight: 2 },
  { name: 'PATCH', weight: 16 },
  { name: 'PATCH list', weight: 3 },
  { name: 'DELETE', weight: 5 },
  { name: 'DELETE list', weight: 3 },
  { name: 'next_address reserve', weight: 15 },
  { name: 'next_network reserve', weight: 8 },
] as const;
type OpName = (typeof OPS)[number]['name'];
const TOTAL_WEIGHT = OPS.reduce((a, o) => a + o.weight, 0);

/** A write in doubt: in flight when the server was killed. */
interface Doubt {
  op: OpName;
  type: 'create' | 'patch' | 'delete' | 'alloc';
  objs: Obj[];
  values: string[];
}

interface OpStats {
  acked: number;
  objects: number;
  doubt: number;
  applied: number;
  refused: number;
  ms: number;
}

const VIOLATION_KINDS = [
  'lost',
  'partial bulks',
  'duplicates',
  'Change mismatches',
  'unexpected objects',
  'unexpected replies',
  'restart',
] as const;
type ViolationKind = (typeof VIOLATION_KINDS)[number];

class Soak {
  readonly sites: SiteModel[] = [];
  readonly ops = new Map<OpName, OpStats>(OPS.map((o) => [o.name, { acked: 0, objects: 0, doubt: 0, applied: 0, refused: 0, ms: 0 }]));
  readonly violations = new Map<ViolationKind, number>(VIOLATION_KINDS.map((k) => [k, 0]));
  readonly details: string[] = [];
  doubts: Doubt[] = [];
  /** Set just before the kill: clients send nothing more, and requests failing from then on are in doubt, not faults. */
  stopping = false;
  base = '';
  private seq = 0;
  handedOut = 0;
  changesChecked = 0;
  /** Change ids seen by a check, and per object (`Resource:id`) how many of its events they covered. */
  readonly changeIds = new Set<number>();
  readonly changesSeen = new Map<string, number>();

  violate(kind: ViolationKind, detail: string, n = 1): void {
    this.violations.set(kind, this.violations.get(kind)! + n);
    if (this.details.length < 30) this.details.push(`${kind}: ${detail}`);
  }

  violationCount(): number {
    return [...this.violations.values()].reduce((a, v) => a + v, 0);
  }

  next(): number {
    return ++this.seq;
  }

  newObj(site: SiteModel, kind: Kind): Obj {
    const n = this.next();
    // /29s from 10.0.0.0 up: 2M of them, none inside another, none inside an allocation parent.
    const key = kind === 'device' ? `soak-s${site.id}-${n}` : `10.${(n >> 13) & 255}.${(n >> 5) & 255}.${(n & 31) << 3}/29`;
    const initial = `c${n}`;
    const obj: Obj = { kind, site, key, initial, id: 0, created: 'maybe', deleted: 'no', value: initial, updates: 0 };
    site.objects[kind].set(key, obj);
    return obj;
  }
}

// ---------------------------------------------------------------- load

const collection = (kind: Kind) => (kind === 'device' ? 'devices' : 'networks');
const keyOf = (kind: Kind, o: any): string => (kind === 'device' ? o?.hostname : o?.cidr);
const soakOf = (o: any): unknown => o?.attributes?.soak;

/** Takes up to `n` random idle objects out of `pool` (they go back when their write is answered). */
function take(pool: Obj[], n: number, rand: () => number): Obj[] {
  const out: Obj[] = [];
  while (out.length < n && pool.length > 0) {
    const i = Math.floor(rand() * pool.length);
    out.push(pool[i]);
    pool[i] = pool[pool.length - 1];
    pool.pop();
  }
  return out;
}

function pickOp(rand: () => number): OpName {
  let r = rand() * TOTAL_WEIGHT;
  for (const o of OPS) {
    r -= o.weight;
    if (r < 0) return o.name;
  }
  return OPS[0].name;
}

const listSize = (rand: () => number) => 50 + Math.floor(rand() * 451);

/** One write: picks its objects, sends it, and records what its answer (or its lack) means. */
async function write(soak: Soak, rand: () => number): Promise<void> {
  const site = soak.sites[Math.floor(rand() * soak.sites.length)];
  let op = pickOp(rand);
  const kind: Kind = rand() < 0.5 ? 'device' : 'network';
  let objs: Obj[] = [];
  if (op === 'PATCH' || op === 'DELETE') objs = take(site.idle[kind], 1, rand);
  else if (op === 'PATCH list') objs = take(site.idle[kind], 5 + Math.floor(rand() * 46), rand);
  else if (op === 'DELETE list') objs = take(site.idle[kind], 5 + Math.floor(rand() * 96), rand);
  if ((op.startsWith('PATCH') || op.startsWith('DELETE')) && objs.length === 0) op = kind === 'device' ? 'POST device' : 'POST network';

  if (op.startsWith('POST')) {
    const k: Kind = op.includes('device') ? 'device' : 'network';
    const n = op.endsWith('list') ? listSize(rand) : 1;
    objs = Array.from({ length: n }, () => soak.newObj(site, k));
    const items = objs.map((o) => ({ [k === 'device' ? 'hostname' : 'cidr']: o.key, attributes: { soak: o.initial } }));
    const reply = await send(soak, op, 'POST', `/api/sites/${site.id}/${collection(k)}/`, n === 1 ? items[0] : items);
    settle(soak, op, 'create', objs, [], reply, 201, (body) => {
      const list = n === 1 ? [body] : body;
      if (!Array.isArray(list) || list.length !== n) return false;
      for (const [i, o] of objs.entries()) {
        if (keyOf(k, list[i]) !== o.key || soakOf(list[i]) !== o.initial || !Number.isInteger(list[i].id)) return false;
        o.id = list[i].id;
      }
      return true;
    });
    return;
  }

  if (op.startsWith('PATCH')) {
    const n = soak.next();
    const values = objs.map((_, i) => `p${n}-${i}`);
    const path = op === 'PATCH' ? `/api/sites/${site.id}/${collection(kind)}/${objs[0].id}/` : `/api/sites/${site.id}/${collection(kind)}/`;
    const body = op === 'PATCH' ? { attributes: { soak: values[0] } } : objs.map((o, i) => ({ id: o.id, attributes: { soak: values[i] } }));
    const reply = await send(soak, op, 'PATCH', path, body);
    settle(soak, op, 'patch', objs, values, reply, 200, (b) => {
      const list: any[] = op === 'PATCH' ? [b] : b;
      if (!Array.isArray(list) || list.length !== objs.length) return false;
      const byId = new Map(list.map((x) => [x?.id, x]));
      return objs.every((o, i) => soakOf(byId.get(o.id)) === values[i]);
    });
    return;
  }

  if (op.startsWith('DELETE')) {
    const reply =
      op === 'DELETE'
        ? await send(soak, op, 'DELETE', `/api/sites/${site.id}/${collection(kind)}/${objs[0].id}/`)
        : await send(
            soak,
            op,
            'DELETE',
            `/api/sites/${site.id}/${collection(kind)}/`,
            objs.map((o) => o.id),
          );
    settle(soak, op, 'delete', objs, [], reply, 204, (_, text) => text === '');
    return;
  }

  // Allocations: next_address (num 1–4) or next_network /28 (num 1–2), reserved.
  const parent = site.alloc[op === 'next_address reserve' ? 0 : 1];
  const num = 1 + Math.floor(rand() * (parent.what === 'next_address' ? 4 : 2));
  const reply = await send(soak, op, 'POST', `${parent.path}&num=${num}`);
  const stat = soak.ops.get(op)!;
  if (reply === null) {
    parent.maybe += num;
    stat.doubt++;
    soak.doubts.push({ op, type: 'alloc', objs: [], values: [] });
    return;
  }
  const got = reply.json;
  const inParent = (c: unknown) => typeof c === 'string' && c.startsWith(parent.prefix);
  if (reply.status !== 200 || !Array.isArray(got) || got.length !== num || !got.every(inParent)) {
    stat.refused++;
    soak.violate('unexpected replies', `POST ${parent.path}&num=${num} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
    return;
  }
  stat.acked++;
  stat.objects += num;
  soak.handedOut += num;
  for (const cidr of got as string[]) {
    if (parent.held.has(cidr)) soak.violate('duplicates', `${parent.what} on ${parent.cidr} in site ${site.id} handed out ${cidr} again`);
    parent.held.add(cidr);
  }
}

/** The reply, or null when the request failed (in doubt when the server is being killed, a fault before). */
async function send(soak: Soak, op: OpName, method: string, path: string, body?: unknown): Promise<Reply | null> {
  const t0 = performance.now();
  try {
    const reply = await request(soak.base, method, path, { body, headers: AUTH });
    soak.ops.get(op)!.ms += performance.now() - t0;
    return reply;
  } catch (err) {
    if (!soak.stopping) soak.violate('unexpected replies', `${method} ${path} failed before the kill: ${(err as Error).message}`);
    return null;
  }
}

/** Applies an answer (or its absence) to the model and gives the objects back to the idle pools. */
function settle(
  soak: Soak,
  op: OpName,
  type: 'create' | 'patch' | 'delete',
  objs: Obj[],
  values: string[],
  reply: Reply | null,
  status: number,
  bodyOk: (json: any, text: string) => boolean,
): void {
  const stat = soak.ops.get(op)!;
  const inDoubt = () => {
    soak.doubts.push({ op, type, objs, values });
    if (type === 'delete') for (const o of objs) o.deleted = 'maybe';
    // Back to the pools once the check after the restart has settled them.
  };
  if (reply === null) {
    stat.doubt++;
    inDoubt();
    return;
  }
  if (reply.status !== status || !bodyOk(reply.json, reply.text)) {
    stat.refused++;
    soak.violate(
      'unexpected replies',
      `${op} (${objs.length} objects, first ${objs[0].key}) answered ${reply.status}: ${reply.text.slice(0, 300)}`,
    );
    // A success status with a wrong body committed something: let the check see what.
    if (reply.status === status) {
      inDoubt();
      return;
    }
    if (type === 'create') {
      for (const o of objs) o.created = 'no';
      return;
    }
  } else {
    stat.acked++;
    stat.objects += objs.length;
    objs.forEach((o, i) => {
      if (type === 'create') o.created = 'yes';
      else if (type === 'patch') {
        o.value = values[i];
        o.updates++;
      } else o.deleted = 'yes';
    });
  }
  for (const o of objs) if (o.created === 'yes' && o.deleted === 'no') o.site.idle[o.kind].push(o);
}

async function client(soak: Soak, rand: () => number): Promise<void> {
  while (!soak.stopping) await write(soak, rand);
}

// ---------------------------------------------------------------- check after a restart

interface Listing {
  byKey: Map<string, any>;
  changes: any[];
}

async function fetchJson(soak: Soak, path: string): Promise<any[]> {
  const r = await request(soak.base, 'GET', path, { headers: AUTH });
  if (r.status !== 200 || !Array.isArray(r.json)) throw new Error(`GET ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.json;
}

/**
 * A site's Changes: all of them when `full`; else the ones no check has seen,
 * read newest first a page at a time up to the first one seen (ids only grow,
 * so everything after it was seen too). Also the number stored.
 */
async function siteChanges(soak: Soak, site: number, full: boolean): Promise<{ changes: any[]; stored: number }> {
  if (full) {
    const changes = await fetchJson(soak, `/api/sites/${site}/changes/`);
    return { changes, stored: changes.length };
  }
  const changes: any[] = [];
  const limit = 2000;
  for (let offset = 0; ; offset += limit) {
    const path = `/api/sites/${site}/changes/?limit=${limit}&offset=${offset}`;
    const r = await request(soak.base, 'GET', path, { headers: AUTH });
    if (r.status !== 200 || !Array.isArray(r.json?.results)) throw new Error(`GET ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
    const page = r.json.results as any[];
    let reachedSeen = false;
    for (const c of page) {
      if (soak.changeIds.has(c.id)) reachedSeen = true;
      else changes.push(c);
    }
    if (reachedSeen || page.length < limit) return { changes, stored: r.json.count };
  }
}

interface CheckResult {
  objects: number;
  changes: number;
  newChanges: number;
  doubts: number;
  applied: number;
  allocDoubts: number;
  allocStored: number;
}

/**
 * Settles every write in doubt, then checks the whole model against what the
 * server serves, and the Changes: all of them when `full`, else the new ones.
 */
async function check(soak: Soak, full: boolean): Promise<CheckResult> {
  const listings = new Map<SiteModel, Record<Kind, Listing>>();
  let objects = 0;
  let changeCount = 0;
  let newChanges = 0;
  // Sites in parallel: they live on different shards.
  await Promise.all(
    soak.sites.map(async (site) => {
      const [devices, networks, changes] = await Promise.all([
        fetchJson(soak, `/api/sites/${site.id}/devices/?fields=id,hostname,attributes`),
        fetchJson(soak, `/api/sites/${site.id}/networks/?fields=id,cidr,state,attributes`),
        siteChanges(soak, site.id, full),
      ]);
      objects += devices.length + networks.length;
      changeCount += changes.stored;
      newChanges += changes.changes.length;
      for (const c of changes.changes) soak.changeIds.add(c.id);
      listings.set(site, {
        device: { byKey: new Map(devices.map((d) => [d.hostname, d])), changes: changes.changes },
        network: { byKey: new Map(networks.map((n) => [n.cidr, n])), changes: changes.changes },
      });
    }),
  );
  const stored = (o: Obj) => listings.get(o.site)![o.kind].byKey.get(o.key);

  // Writes in doubt: all or nothing per request, then certain.
  let applied = 0;
  let allocStored = 0;
  const allocDoubts = soak.doubts.filter((d) => d.type === 'alloc').length;
  const doubts = soak.doubts.length - allocDoubts;
  for (const d of soak.doubts) {
    if (d.type === 'alloc') continue; // judged with the parent's children below
    const done = d.objs.map((o, i) => {
      const s = stored(o);
      if (d.type === 'create') return s !== undefined;
      if (d.type === 'delete') return s === undefined;
      return s !== undefined && soakOf(s) === d.values[i];
    });
    const n = done.filter(Boolean).length;
    if (n > 0 && n < done.length) {
      soak.violate(
        'partial bulks',
        `${d.op} of ${done.length} in flight at the kill: ${n} applied (first ${d.objs[0].key}, site ${d.objs[0].site.id})`,
      );
    }
    if (n === done.length) {
      applied++;
      soak.ops.get(d.op)!.applied++;
    }
    d.objs.forEach((o, i) => {
      if (d.type === 'create') o.created = done[i] ? 'yes' : 'no';
      else if (d.type === 'delete') o.deleted = done[i] ? 'yes' : 'no';
      else if (done[i]) {
        o.value = d.values[i];
        o.updates++;
      }
    });
  }
  soak.doubts = [];

  for (const site of soak.sites) {
    const listing = listings.get(site)!;
    for (const kind of ['device', 'network'] as const) {
      const { byKey } = listing[kind];
      for (const o of site.objects[kind].values()) {
        const s = byKey.get(o.key);
        if (o.created === 'no' || o.deleted === 'yes') {
          if (s !== undefined) {
            soak.violate(
              o.created === 'no' ? 'unexpected objects' : 'lost',
              `${kind} ${o.key} (site ${site.id}) is stored but its ` +
                `${o.created === 'no' ? 'create was refused or not applied' : 'delete was applied'}`,
            );
          }
          continue;
        }
        if (s === undefined) {
          soak.violate('lost', `${kind} ${o.key} (site ${site.id}, id ${o.id}) acknowledged but missing`);
          continue;
        }
        if (o.id !== 0 && s.id !== o.id) soak.violate('lost', `${kind} ${o.key} (site ${site.id}) has id ${s.id}, acknowledged as ${o.id}`);
        o.id = s.id;
        if (soakOf(s) !== o.value) {
          soak.violate('lost', `${kind} ${o.key} (site ${site.id}) holds soak=${JSON.stringify(soakOf(s))}, expected ${o.value}`);
        }
        if (kind === 'network' && s.state !== 'allocated') {
          soak.violate('lost', `network ${o.key} (site ${site.id}) is ${s.state}, expected allocated`);
        }
      }
      for (const key of byKey.keys()) {
        if (site.objects[kind].has(key)) continue;
        if (kind === 'network' && site.alloc.some((p) => p.cidr === key || key.startsWith(p.prefix))) continue;
        soak.violate('unexpected objects', `${kind} ${key} (site ${site.id}) is stored but was never sent`);
      }
      // Pools again: every object known to exist, none in flight now.
      site.idle[kind] = [...site.objects[kind].values()].filter((o) => o.created === 'yes' && o.deleted === 'no');
    }

    // Allocations: every held child stored and reserved; new ones only as many as the requests in doubt asked for.
    const nets = listing.network.byKey;
    for (const p of site.alloc) {
      const children = [...nets.values()].filter((n) => n.cidr !== p.cidr && n.cidr.startsWith(p.prefix));
      const childSet = new Set(children.map((c) => c.cidr));
      for (const c of p.held) if (!childSet.has(c)) soak.violate('lost', `${p.what} child ${c} of ${p.cidr} (site ${site.id}) missing`);
      for (const c of children) {
        if (c.state !== 'reserved') soak.violate('lost', `${p.what} child ${c.cidr} (site ${site.id}) is ${c.state}, expected reserved`);
      }
      const extra = children.filter((c) => !p.held.has(c.cidr));
      if (extra.length > p.maybe) {
        soak.violate(
          'unexpected objects',
          `${extra.length} unacknowledged children of ${p.cidr} (site ${site.id}), but requests in doubt asked for ${p.maybe}`,
        );
      }
      for (const c of extra) p.held.add(c.cidr);
      allocStored += extra.length;
      soak.ops.get(p.what === 'next_address' ? 'next_address reserve' : 'next_network reserve')!.applied += extra.length;
      p.maybe = 0;
    }

    checkChanges(soak, site, listing.device.changes, nets, full);
  }
  soak.changesChecked = changeCount;
  return { objects, changes: changeCount, newChanges, doubts, applied, allocDoubts, allocStored };
}

/**
 * The Changes of a site, matched to the writes the model knows were applied:
 * all of them when `full`, else only those not seen by an earlier check
 * (each object's new Changes must then be the next events it is owed).
 */
function checkChanges(soak: Soak, site: SiteModel, changes: any[], networks: Map<string, any>, full: boolean): void {
  const groups = new Map<string, any[]>();
  for (const c of changes) {
    const k = `${c.resource_name}:${c.resource_id}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(c);
  }
  for (const g of groups.values()) g.sort((a, b) => a.id - b.id);
  const mismatch = (what: string, got: any[]) =>
    soak.violate('Change mismatches', `${what} (site ${site.id}): Changes ${JSON.stringify(got.map((c) => [c.id, c.event]))}`);
  /** `content` judges the Changes `g`, which start at event `from` of `want`; it returns what is wrong, if anything. */
  const expect = (resource: string, id: number, want: string[], what: string, content: (g: any[], from: number) => string | null) => {
    const k = `${resource}:${id}`;
    const from = full ? 0 : (soak.changesSeen.get(k) ?? 0);
    const g = groups.get(k) ?? [];
    groups.delete(k);
    soak.changesSeen.set(k, want.length);
    if (g.map((c) => c.event).join() !== want.slice(from).join()) {
      mismatch(`${what}: expected ${want.slice(from).join(', ') || 'none'}`, g);
      return;
    }
    const bad = content(g, from);
    if (bad) mismatch(`${what}: ${bad}`, g);
  };
  const none = () => null;

  expect('Site', site.id, ['Create'], `site ${site.id}`, none);
  for (const s of site.setup) expect(s.resource, s.id, ['Create'], `${s.resource} ${s.id}`, none);
  for (const p of site.alloc) {
    for (const c of p.held) {
      const n = networks.get(c);
      if (!n) continue; // reported as lost
      expect('Network', n.id, ['Create'], `${p.what} child ${c}`, (g, from) =>
        from === 0 && (g[0].resource?.cidr !== c || g[0].resource?.state !== 'reserved') ? 'Create carries other content' : null,
      );
    }
  }
  for (const kind of ['device', 'network'] as const) {
    const resource = kind === 'device' ? 'Device' : 'Network';
    for (const o of site.objects[kind].values()) {
      if (o.created !== 'yes') continue;
      const want = ['Create', ...Array<string>(o.updates).fill('Update'), ...(o.deleted === 'yes' ? ['Delete'] : [])];
      expect(resource, o.id, want, `${kind} ${o.key} id ${o.id}`, (g, from) => {
        const created = g[0]?.resource;
        if (from === 0 && (keyOf(kind, created) !== o.key || soakOf(created) !== o.initial)) return 'Create carries other content';
        const newest = want.length - (o.deleted === 'yes' ? 2 : 1); // the newest Change before any Delete
        if (newest >= from && soakOf(g[newest - from].resource) !== o.value) {
          return `newest Change carries soak=${JSON.stringify(soakOf(g[newest - from].resource))}, expected ${o.value}`;
        }
        return null;
      });
    }
  }
  for (const [k, g] of groups) mismatch(`Changes of ${k}, which no applied write made`, g);
}

// ---------------------------------------------------------------- the run

async function setup(soak: Soak, count: number): Promise<void> {
  const post = async (path: string, body?: unknown) => {
    const r = await request(soak.base, 'POST', path, { body, headers: AUTH });
    if (r.status !== 201) throw new Error(`setup: POST ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r.json;
  };
  for (let i = 0; i < count; i++) {
    const s = await post('/api/sites/', { name: `soak-${i + 1}` });
    const site: SiteModel = {
      id: s.id,
      setup: [],
      objects: { device: new Map(), network: new Map() },
      idle: { device: [], network: [] },
      alloc: [],
    };
    for (const resource of ['Device', 'Network']) {
      const a = await post(`/api/sites/${site.id}/attributes/`, { name: 'soak', resource_name: resource });
      site.setup.push({ resource: 'Attribute', id: a.id });
    }
    for (const [what, cidr, prefix, query] of [
      ['next_address', '172.16.0.0/12', '172.', 'next_address/?reserve=true'],
      ['next_network', '100.64.0.0/10', '100.', 'next_network/?reserve=true&prefix_length=28'],
    ] as const) {
      const n = await post(`/api/sites/${site.id}/networks/`, { cidr });
      site.setup.push({ resource: 'Network', id: n.id });
      site.alloc.push({ what, cidr, prefix, path: `/api/sites/${site.id}/networks/${cidr}/${query}`, id: n.id, held: new Set(), maybe: 0 });
    }
    soak.sites.push(site);
  }
}

/** Spawn to listening on a fresh empty data dir, in ms. */
async function emptyStart(shards: number): Promise<number> {
  const s = await startNetsot({ shards });
  await s.stop();
  return s.listeningAt - s.spawnedAt;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

export async function run(args: string[]): Promise<number> {
  const opts = parseOptions(args);
  const rand = prng(opts.seed);
  const soak = new Soak();
  const data = tempDir('netsot-soak-');
  const restarts: number[] = [];
  // The baseline for restart times: the same server starting on an empty data dir, before the rounds and after.
  const emptyStarts: number[] = [];
  let gracefulMs = NaN;
  let server: ChildServer | undefined;
  let loadSeconds = 0;
  const t0 = performance.now();
  log(
    `soak: ${opts.rounds} rounds of kill -9 under mixed write load, ${opts.minSeconds}–${opts.maxSeconds} s of load per round, ` +
      `${opts.connections} connections, ${opts.shards} shards, ${opts.sites} sites, seed ${opts.seed}; data dir ${data.path}`,
  );
  try {
    emptyStarts.push(await emptyStart(opts.shards));
    server = await startNetsot({ dataDir: data.path, shards: opts.shards });
    soak.base = server.base;
    await setup(soak, opts.sites);
    for (let round = 1; round <= opts.rounds; round++) {
      const seconds = opts.minSeconds + rand() * (opts.maxSeconds - opts.minSeconds);
      const before = new Map([...soak.ops].map(([k, v]) => [k, { ...v }]));
      soak.stopping = false;
      const clients = Array.from({ length: opts.connections }, (_, i) => client(soak, prng(opts.seed * 7919 + round * 1009 + i)));
      await sleep(seconds * 1000);
      soak.stopping = true;
      await server.kill();
      await Promise.all(clients);
      loadSeconds += seconds;

      server = await startNetsot({ dataDir: data.path, shards: opts.shards, startTimeoutMs: 120_000 });
      soak.base = server.base;
      const restartMs = server.listeningAt - server.spawnedAt;
      restarts.push(restartMs);
      const sites = await request(soak.base, 'GET', '/api/sites/', { headers: AUTH });
      const listed = new Set(Array.isArray(sites.json) ? sites.json.map((s: any) => s.id) : []);
      if (sites.status !== 200 || soak.sites.some((s) => !listed.has(s.id))) {
        soak.violate('restart', `round ${round}: GET /api/sites/ answered ${sites.status}: ${sites.text.slice(0, 300)}`);
      }
      const bad0 = soak.violationCount();
      const c0 = performance.now();
      const checked = await check(soak, round === opts.rounds);
      const checkMs = performance.now() - c0;
      let acked = 0;
      let objects = 0;
      for (const [k, v] of soak.ops) {
        acked += v.acked - before.get(k)!.acked;
        objects += v.objects - before.get(k)!.objects;
      }
      const bad = soak.violationCount() - bad0;
      log(
        `round ${String(round).padStart(String(opts.rounds).length)}/${opts.rounds}: ${seconds.toFixed(1)} s load, ` +
          `${fmt.int(acked)} writes acknowledged ` +
          `(${fmt.int(objects)} objects); in flight at the kill: ${plural(checked.doubts, 'write')} (${checked.applied} applied), ` +
          `${plural(checked.allocDoubts, 'allocation')} (${checked.allocStored} stored); restart ${fmt.int(restartMs)} ms, ` +
          `checked ${fmt.int(checked.objects)} objects and ` +
          `${checked.newChanges === checked.changes ? 'all ' : `${fmt.int(checked.newChanges)} new of `}` +
          `${fmt.int(checked.changes)} Changes in ${(checkMs / 1000).toFixed(1)} s: ` +
          `${bad === 0 ? 'ok' : `${bad} VIOLATIONS`}`,
      );
    }
    // The same data once more after a graceful stop: what a restart costs without a crash before it.
    await server.stop();
    server = await startNetsot({ dataDir: data.path, shards: opts.shards, startTimeoutMs: 120_000 });
    gracefulMs = server.listeningAt - server.spawnedAt;
    await server.stop();
    server = undefined;
    emptyStarts.push(await emptyStart(opts.shards));
  } finally {
    await server?.stop();
    data.remove();
  }

  let acked = 0;
  let objects = 0;
  for (const v of soak.ops.values()) {
    acked += v.acked;
    objects += v.objects;
  }
  const meanMs = (v: OpStats) => (v.acked + v.refused > 0 ? (v.ms / (v.acked + v.refused)).toFixed(1) : '-');
  const rows = [...soak.ops].map(([name, v]) => [name, fmt.int(v.acked), fmt.int(v.objects), meanMs(v), v.doubt, v.applied, v.refused]);
  rows.push([
    'all',
    fmt.int(acked),
    fmt.int(objects),
    '',
    [...soak.ops.values()].reduce((a, v) => a + v.doubt, 0),
    [...soak.ops.values()].reduce((a, v) => a + v.applied, 0),
    [...soak.ops.values()].reduce((a, v) => a + v.refused, 0),
  ]);
  const r = stats(restarts);
  const bulkDoubts = [...soak.ops].filter(([k]) => k.endsWith('list')).reduce((a, [, v]) => a + v.doubt, 0);
  log('');
  log(table(['write', 'acknowledged', 'objects', 'mean ms', 'in flight at a kill', 'of which applied', 'refused'], rows));
  log(
    '(objects: items of the acknowledged writes; for allocations, "of which applied" counts addresses or prefixes found stored ' +
      'though their answer was lost)',
  );
  log('');
  log(
    table(
      ['check', 'violations', 'over'],
      [
        ['lost acknowledged writes', soak.violations.get('lost')!, `${fmt.int(acked)} acknowledged writes (${fmt.int(objects)} objects)`],
        ['partial bulks', soak.violations.get('partial bulks')!, `${bulkDoubts} lists in flight at a kill`],
        ['duplicate allocations', soak.violations.get('duplicates')!, `${fmt.int(soak.handedOut)} addresses and prefixes handed out`],
        ['Change mismatches', soak.violations.get('Change mismatches')!, `${fmt.int(soak.changesChecked)} Changes, all checked at the end`],
        ['unexpected objects', soak.violations.get('unexpected objects')!, ''],
        ['unexpected replies', soak.violations.get('unexpected replies')!, ''],
        ['failed restarts', soak.violations.get('restart')!, `${plural(restarts.length, 'restart')} after kill -9`],
      ],
    ),
  );
  log('');
  log(
    `restart, spawn to listening: after kill -9 p50 ${fmt.int(r.p50)} ms, max ${fmt.int(r.max)} ms; ` +
      `the final data after SIGTERM ${fmt.int(gracefulMs)} ms; an empty data dir ${emptyStarts.map((ms) => fmt.int(ms)).join(' and ')} ms`,
  );
  const total = soak.violationCount();
  log(
    `${opts.rounds} kill -9 rounds, ${loadSeconds.toFixed(0)} s of load, ${((performance.now() - t0) / 1000).toFixed(0)} s in all: ` +
      `${total === 0 ? '0 violations' : `${total} VIOLATIONS`}`,
  );
  log(
    JSON.stringify({
      scenario: 'soak',
      rounds: opts.rounds,
      seconds: [opts.minSeconds, opts.maxSeconds],
      connections: opts.connections,
      shards: opts.shards,
      sites: opts.sites,
      seed: opts.seed,
      load_seconds: Number(loadSeconds.toFixed(1)),
      acknowledged: acked,
      acknowledged_objects: objects,
      by_write: Object.fromEntries(soak.ops),
      handed_out: soak.handedOut,
      changes_at_last_check: soak.changesChecked,
      violations: Object.fromEntries(soak.violations),
      restart_ms: { p50: Math.round(r.p50), max: Math.round(r.max) },
      graceful_restart_ms: Math.round(gracefulMs),
      empty_start_ms: emptyStarts.map(Math.round),
      ...machine(),
    }),
  );
  if (total > 0) {
    process.stderr.write(`soak: ${total} violations; the first ones:\n${soak.details.map((d) => `  ${d}`).join('\n')}\n`);
    return 1;
  }
  return 0;
}
