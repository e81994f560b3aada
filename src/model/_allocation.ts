/**
 * Allocation (docs/api.md §14.2, issue 25): next_network / next_address under one
 * network, and over a pool (the networks a set query selects in one site,
 * in address order, the first with room first; `num` may span members). A
 * POST creates what it finds, in one Transaction (so one commit: all or
 * nothing), each network carrying the optional body's `attributes` and
 * `state`, validated once before anything is searched. A POST creates its
 * blocks a step each (NEXT_NUM_MAX of them may be many: shard/steps.ts), and
 * a pool's set query tests its regexes in steps too. The network model
 * declares the routes; it is reached here through `model()` at request time.
 */
import { Errors } from '../errors.js';
import { formatCidr } from '../ip/address.js';
import type { FreeBlockQuery } from '../ip/prefix-tree.js';
import { flag, integer, SET_QUERY } from '../routes/params.js';
import type { Route, RouteResult } from '../routes/route.js';
import { detailRoute, listRoute, view } from '../routes/standard.js';
import { requireObject, validateFields } from '../schema/validate.js';
import { authorize, authorizeAny } from '../shard/authorize.js';
import type { RequestContext } from '../shard/context.js';
import type { Steps } from '../shard/steps.js';
import { type Attrs, resolveAttributes } from './_attributes.js';
import { cidrText, duplicateNetwork, insertNetwork, type NetworkRecord, type NetworkState, treeOf, widthOf } from './_networks.js';
import { poolWalk } from './_pool-order.js';
import { setQueryMembers } from './_resource.js';
import type { ResourceModel } from './model.js';

type NetworkModel = ResourceModel<NetworkRecord>;

const intError = (field: string, v: string | undefined) =>
  v === undefined
    ? Errors.fieldPlain(field, "int() argument must be a string or a number, not 'NoneType'")
    : Errors.fieldPlain(field, `invalid literal for int() with base 10: '${v}'`);

export function pyInt(v: string): number | null {
  const s = v.trim();
  return /^[-+]?\d+$/.test(s) ? Number(s) : null;
}

/** What a next_* request asks for, read from its query (docs/api.md §14.2). */
interface NextParams {
  strict: boolean;
  reserve: boolean;
  /** next_network's prefix length; null for next_address (each parent's full length). */
  len: number | null;
  num: number;
}

/**
 * The query's checks in the order of docs/api.md §14.2: flags, prefix_length, num. `p` (one parent) adds its own
 * checks in their places; without it (a pool) only a length no IP version has is refused.
 */
function nextParams(ctx: RequestContext, addresses: boolean, p: NetworkRecord | null): NextParams {
  const q = ctx.query;
  const strict = q.flag('strict_allocation', false);
  const reserve = ctx.req.method === 'POST' ? q.flag('reserve', false) : false;
  let len: number | null = null;
  let lText = '';
  if (!addresses) {
    const raw = q.get('prefix_length');
    const n = raw === undefined ? null : pyInt(raw);
    if (n === null) throw intError('prefix_length', raw);
    len = n;
    lText = BigInt(raw!.trim()).toString(); // as Python prints it: exact digits, however large
    if (p && len < p.len) throw Errors.fieldPlain('prefix_length', `New prefix must be longer than ${p.len}`);
  }
  const rawNum = q.get('num');
  const num = rawNum === undefined ? 1 : pyInt(rawNum);
  if (num === null) throw intError('num', rawNum);
  const max = ctx.config.nextNumMax;
  if (num < 1 || num > max) throw Errors.fieldPlain('num', `num must be between 1 and ${max}`);
  if (len !== null && p && len > widthOf(p))
    throw Errors.fieldPlain('prefix_length', `prefix length diff ${lText} is invalid for netblock ${cidrText(ctx.shard, p)}`);
  if (len !== null && !p && (len < 0 || len > 128)) throw Errors.fieldPlain('prefix_length', `Invalid prefix_length: '${lText}'`);
  return { strict, reserve, len, num };
}

/** Which blocks of `p` next_* offers (docs/api.md §14.2): of length L, by the strict rule or not, hosts without p's ends. */
function blockQuery(ctx: RequestContext, p: NetworkRecord, params: NextParams): Omit<FreeBlockQuery, 'num'> {
  const W = widthOf(p);
  const len = params.len ?? W;
  const interconnect = p.version === 4 ? ctx.config.interconnectPrefixes.v4 : ctx.config.interconnectPrefixes.v6;
  return { len, strict: params.strict, excludeEnds: len === W && p.len !== interconnect };
}

/** The first `num` blocks next_* offers in `p` (block start addresses); a reserved parent offers none. */
function offered(ctx: RequestContext, p: NetworkRecord, params: NextParams, num: number): bigint[] {
  if (p.state === 'reserved') return [];
  return treeOf(ctx.shard, p).freeBlocks(p.addr, p.len, { ...blockQuery(ctx, p, params), num });
}

/** What every network a POST creates carries: the body's state and attributes, or the defaults. */
interface Labels {
  state: NetworkState;
  attributes: Attrs;
}

/**
 * The optional body of a next_* POST, `{"attributes": {…}, "state": "…"}`, validated as a network create
 * validates those fields (400 naming the field), before anything is searched or created. Other fields are
 * ignored, as a create ignores unknown ones (docs/api.md §9.1): a body a client sent before bodies counted
 * still allocates as it did. `state` and `reserve=true` must agree.
 */
function labels(ctx: RequestContext, model: NetworkModel, site: number, reserve: boolean): Labels {
  const body = requireObject(ctx.req.body ?? {});
  // Most allocations carry no body: the schema is asked only about a state given.
  const state = body.state === undefined ? undefined : (validateFields(model.schema, { state: body.state }, 'PATCH').state as NetworkState);
  if (reserve && state !== undefined && state !== 'reserved') throw Errors.field('state', `"${state}" conflicts with reserve=true.`);
  return {
    state: state ?? (reserve ? 'reserved' : 'allocated'),
    attributes: resolveAttributes(ctx, 'Network', site, body.attributes, null, 'POST'),
  };
}

const ok = (items: string[]): RouteResult => ({ kind: 'raw', status: 200, body: JSON.stringify(items) });

/** Creates the blocks found in `p` (each in p's site, docs/api.md §14.2), a step each, and returns their CIDRs. */
function* allocate(ctx: RequestContext, p: NetworkRecord, blocks: bigint[], len: number, labels: Labels): Steps<string[]> {
  const site = ctx.site(p.siteId)!;
  const made: string[] = [];
  for (const addr of blocks) {
    const c = { version: p.version, addr, len };
    insertNetwork(ctx, site, c, labels.state, undefined, labels.attributes);
    made.push(formatCidr(c, ctx.shard.config.compressIpv6));
    yield;
  }
  return made;
}

/** next_* under one network: GET finds, POST also creates (its `add` was checked on p by the dispatcher). */
function* nextInParent(ctx: RequestContext, model: NetworkModel, p: NetworkRecord, addresses: boolean): Steps<RouteResult> {
  if (p.state === 'reserved') return ok([]);
  const params = nextParams(ctx, addresses, p);
  const post = ctx.req.method === 'POST';
  const tags = post ? labels(ctx, model, p.siteId, params.reserve) : null;
  const L = params.len ?? widthOf(p);
  const blocks = offered(ctx, p, params, params.num);
  if (!tags) return ok(blocks.map((addr) => formatCidr({ version: p.version, addr, len: L }, ctx.shard.config.compressIpv6)));
  if (L === p.len && blocks.length > 0) throw duplicateNetwork(); // the only block is P itself, which exists
  return ok(yield* allocate(ctx, p, blocks, L, tags));
}

/**
 * next_* over a pool, POST: from each member in address order, as many of what is still wanted as it offers
 * (a member too small for the length, or reserved, offers none), created at once so that a member nested in
 * an earlier one sees them. A caller with no `add` in the site is refused first; one with object grants needs
 * `add` on each member it takes from, and a refusal there undoes everything.
 * No member with room answers `[]`, as a full parent does.
 */
function* nextInPool(ctx: RequestContext, model: NetworkModel, addresses: boolean): Steps<RouteResult> {
  const site = ctx.site(ctx.urlSite!);
  if (!site) throw Errors.siteMissing(ctx.urlSiteLabel);
  authorizeAny(ctx, model, site.id);
  const params = nextParams(ctx, addresses, null);
  const tags = labels(ctx, model, site.id, params.reserve);
  const out: string[] = [];
  const trees = { 4: treeOf(ctx.shard, { siteId: site.id, version: 4 }), 6: treeOf(ctx.shard, { siteId: site.id, version: 6 }) };
  const { answer, records } = yield* setQueryMembers<NetworkRecord>(ctx, model, 'Network');
  const table = ctx.shard.table<NetworkRecord>(model.kind);
  const pool = `${site.id}\n${ctx.query.get('query')}`;
  const walk = poolWalk(table, [trees[4], trees[6]], pool, `${params.len}/${params.strict}`, answer, records);
  for (const p of walk.members) {
    const W = widthOf(p);
    const L = params.len ?? W;
    if (L <= p.len || L > W || p.state === 'reserved') continue;
    // Most members a busy pool passes over are full: the tree says so from the member's node, without a search.
    const q = blockQuery(ctx, p, params);
    const tree = trees[p.version];
    if (!tree.hasFreeBlock(p.addr, p.len, q)) continue;
    walk.allocating();
    const blocks = tree.freeBlocks(p.addr, p.len, { ...q, num: params.num - out.length });
    authorize(ctx, model, p.siteId, p);
    out.push(...(yield* allocate(ctx, p, blocks, L, tags)));
    if (out.length >= params.num) break;
  }
  walk.done();
  return ok(out);
}

const NEXT_PARAMS = [
  integer('num', 'How many to find (1 to NEXT_NUM_MAX).', 1),
  flag('strict_allocation', 'Only space no network occupies at all, not even a reserved or orphaned one.'),
];
const RESERVE = flag('reserve', 'POST: create them as reserved instead of allocated.');
const PREFIX_LENGTH = integer('prefix_length', 'The prefix length of the networks to find.');
const BODY_HELP =
  'Optional: {"attributes": {…}, "state": "…"} for every network created, validated as a network create validates them ' +
  '(400 naming the field, nothing created); other fields are ignored.';

/** GET finds free space under this network; POST also creates it, with `add` on the network. */
export function nextRoute(model: () => NetworkModel, segment: string, what: string, addresses: boolean): Route {
  const query = addresses ? NEXT_PARAMS : [PREFIX_LENGTH, ...NEXT_PARAMS];
  const run = (ctx: RequestContext, n: NetworkRecord) => nextInParent(ctx, model(), n, addresses);
  return detailRoute(segment, {
    GET: view(`The next free ${what} under this network`, 'strings', run, { query }),
    POST: {
      summary: `Allocate the next free ${what} under this network`,
      permission: 'add',
      query: [...query, RESERVE],
      body: 'allocation',
      bodyHelp: BODY_HELP,
      response: { status: 200, shape: 'strings', help: 'The CIDRs created.' },
      run,
    },
  });
}

/** POST `…/networks/next_*` in a site: allocate over the pool the set query selects (with `add` on each member taken from). */
export function poolRoute(model: () => NetworkModel, segment: string, what: string, addresses: boolean): Route {
  const query = [SET_QUERY[0], ...(addresses ? NEXT_PARAMS : [PREFIX_LENGTH, ...NEXT_PARAMS]), RESERVE];
  return {
    ...listRoute(segment, {
      POST: {
        summary: `Allocate the next free ${what} from a pool: the networks a set query selects, in address order`,
        permission: 'add',
        query,
        body: 'allocation',
        bodyHelp: BODY_HELP,
        response: { status: 200, shape: 'strings', help: 'The CIDRs created, in the order of the pool.' },
        run: (ctx) => nextInPool(ctx, model(), addresses),
      },
    }),
    nestedOnly: true,
  };
}
