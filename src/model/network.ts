/**
 * Network (docs/api.md §13, §14): IPAM. Each site keeps one
 * prefix tree per IP version (shard.tree); a network's parent, children and
 * free space are questions to that tree, so reparenting on create and delete
 * is not a write at all, next_network / next_address cost O(W · num)
 * (model/_allocation.ts, with pools and labelled allocations), and a network's
 * utilization/ and a page of its available/ O(W) (model/_network-space.ts).
 */
import { Type } from '@sinclair/typebox';
import { Errors, errorEnvelope } from '../errors.js';
import { type Cidr, cidrKey, formatAddress, parseAddress, parseCidr } from '../ip/address.js';
import type { Entry } from '../ip/prefix-tree.js';
import type { FilterSpec } from '../query/filters.js';
import type { QueryParams } from '../query/params.js';
import { flag, integer } from '../routes/params.js';
import type { Api, QueryParam, RouteResult } from '../routes/route.js';
import { detailRoute, keyRoute, listRoute, view } from '../routes/standard.js';
import { defineSchema, Field } from '../schema/fields.js';
import { validateFields } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { DerivedIndex, ShardState } from '../shard/state.js';
import type { StoredObject } from '../types/stored.js';
import { nextRoute, poolRoute, pyInt } from './_allocation.js';
import { type AssignmentHolder, assignmentModel, assignmentsOfNetwork } from './_assignments.js';
import { attributesField, attributeValuesIndex, resolveAttributes, valueIdsFor } from './_attributes.js';
import { availableRoute, utilizationFilters, utilizationRoute } from './_network-space.js';
import { cidrOf, cidrText, insertNetwork, type NetworkRecord, type NetworkState, STATES, treeOf, widthOf } from './_networks.js';
import { resourceList, resourceRoutes, siteIdField } from './_resource.js';
import type { DeleteRule, ResourceModel } from './model.js';

export const networkSchema = defineSchema('Network', 'API endpoint that allows Networks to be viewed or edited.', {
  id: Field.id(),
  cidr: Field.string({ createOnly: true, help: 'The network address and prefix length (e.g. 10.0.0.0/8).' }),
  parent_id: Field.integer({ readOnly: true, nullable: true }),
  parent: Field.string({ readOnly: true, nullable: true }),
  site_id: siteIdField(),
  is_ip: Field.boolean({ readOnly: true }),
  ip_version: Field.choice(['4', '6'], { readOnly: true }),
  // null counts as absent: `cidr` is built only from a non-null pair (docs/api.md §13.1).
  network_address: Field.string({ createOnly: true, nullable: true, help: 'The network address.' }),
  prefix_length: Field.integer({ createOnly: true, nullable: true, help: 'The prefix length.' }),
  state: Field.choice(STATES, { help: 'The allocation state of the Network.' }),
  attributes: attributesField(['PUT']),
});
void Type;

const width = widthOf;
const compress = (shard: ShardState) => shard.config.compressIpv6;

const parentOf = (shard: ShardState, n: NetworkRecord) => treeOf(shard, n).parent(n.addr, n.len)?.value;
const values = (entries: Iterable<Entry<NetworkRecord>>) => [...entries].map((e) => e.value);

function render(n: NetworkRecord, shard: ShardState) {
  const parent = parentOf(shard, n);
  return {
    id: n.id,
    cidr: cidrText(shard, n),
    parent_id: parent?.id ?? null,
    parent: parent ? cidrText(shard, parent) : null,
    site_id: n.siteId,
    is_ip: n.len === width(n),
    ip_version: String(n.version),
    network_address: formatAddress(n.version, n.addr, compress(shard)),
    prefix_length: n.len,
    state: n.state,
    attributes: n.attributes,
  };
}

/** Keeps each site's prefix trees in step with its networks. */
const treeIndex: DerivedIndex<NetworkRecord> = {
  add(shard, n) {
    treeOf(shard, n).insert(n.addr, n.len, n);
  },
  remove(shard, n) {
    treeOf(shard, n).delete(n.addr, n.len);
  },
};

const notAppearNetwork = (v: string) => `'${v}' does not appear to be an IPv4 or IPv6 network`;

/** A path or filter key as a prefix: strict, a bare address meaning the host prefix. */
function keyCidr(key: string, field = 'cidr', list = false): Cidr {
  const c = parseCidr(key);
  if (typeof c === 'string') throw list ? Errors.field(field, notAppearNetwork(key)) : Errors.fieldPlain(field, notAppearNetwork(key));
  return c;
}

// ---- filters (docs/api.md §7.4) ----

function includeFilter(q: QueryParams): ((n: NetworkRecord) => boolean) | null {
  const ips = q.filterBoolean('include_ips');
  const nets = q.filterBoolean('include_networks');
  if (ips === undefined && nets === undefined) return null;
  // Compat, per the worked cases of docs/api.md §7.4: one flag alone selects by
  // its value (true: only its kind; false: only the other kind), so
  // include_ips=false alone gives the networks and include_networks=false
  // alone the IPs. Both given: each decides for its own kind.
  const wantIps = ips ?? !nets;
  const wantNets = nets ?? !ips;
  if (wantIps && wantNets) return null;
  return (n) => (n.len === width(n) ? wantIps : wantNets);
}

const filters: FilterSpec<NetworkRecord>[] = [
  {
    param: 'cidr',
    type: 'custom',
    compile: (q) => {
      const v = q.get('cidr');
      if (v === undefined || v === '') return null;
      const c = keyCidr(v, 'cidr', true);
      return (n) => n.version === c.version && n.addr === c.addr && n.len === c.len;
    },
  },
  {
    param: 'network_address',
    type: 'custom',
    compile: (q) => {
      const v = q.get('network_address');
      if (v === undefined || v === '') return null;
      const a = parseAddress(v);
      if (!a) throw Errors.field('network_address', `'${v}' does not appear to be an IPv4 or IPv6 address`);
      return (n) => n.version === a.version && n.addr === a.addr;
    },
  },
  { param: 'prefix_length', type: 'integer', value: (n) => n.len },
  { param: 'ip_version', type: 'choice', choices: ['4', '6'], value: (n) => String(n.version) },
  { param: 'state', type: 'choice', choices: STATES, value: (n) => n.state },
  // `false` applies no filter.
  {
    param: 'root_only',
    type: 'custom',
    compile: (q, shard) => (q.filterBoolean('root_only') ? (n) => parentOf(shard, n) === undefined : null),
  },
  { param: 'include_ips', type: 'custom', compile: includeFilter },
  ...utilizationFilters,
];

// ---- traversal (docs/api.md §13.3) ----

const list = (records: Iterable<StoredObject>, extra: Partial<Extract<RouteResult, { kind: 'list' }>> = {}): RouteResult => ({
  kind: 'list',
  model: networkModel,
  records,
  ...extra,
});

function noneAbove(ctx: RequestContext) {
  return Errors.noSuch('Network', ctx.req.siteText ?? ctx.urlSite, null);
}

function ancestorsOf(ctx: RequestContext, n: NetworkRecord): NetworkRecord[] {
  return values(treeOf(ctx.shard, n).ancestors(n.addr, n.len));
}

function siblingsOf(ctx: RequestContext, n: NetworkRecord): NetworkRecord[] {
  const parent = parentOf(ctx.shard, n);
  if (parent) return values(treeOf(ctx.shard, parent).children(parent.addr, parent.len));
  // Roots are siblings of every root of the site, both versions, IPv4 first.
  return [...values(ctx.shard.tree<NetworkRecord>(n.siteId, 4).roots()), ...values(ctx.shard.tree<NetworkRecord>(n.siteId, 6).roots())];
}

/**
 * Children protect a network unless `force_delete` (a detail-route flag, read
 * and so validated on every detail delete; a bulk delete ignores it, docs/api.md
 * §9.8) hands them to its parent, which a root whose children are leaves
 * cannot do.
 */
const protectChildren: DeleteRule<NetworkRecord> = {
  kind: 'network',
  via: (shard, n) => values(treeOf(shard, n).children(n.addr, n.len)).map((c) => c.id),
  policy: 'protect',
  field: 'parent',
  lift(ctx, n, children, batch) {
    const force = batch ? false : ctx.query.flag('force_delete', false);
    if (children.length === 0 || !force) return false;
    const t = treeOf(ctx.shard, n);
    if (parentOf(ctx.shard, n) === undefined && (children as NetworkRecord[]).some((c) => !t.hasDescendants(c.addr, c.len))) {
      throw Errors.forceDeleteRootOfLeaves();
    }
    return true;
  },
};

// ---- routes (docs/api.md §13, §14) ----

const closestParent = (ctx: RequestContext, key: string): RouteResult => {
  const c = parseCidr(key);
  if (typeof c === 'string') throw Errors.fieldPlain('cidr', notAppearNetwork(key));
  const raw = ctx.query.get('prefix_length');
  const min = raw === undefined ? 0 : pyInt(raw);
  if (min === null || min < 0 || min > c.len) throw Errors.fieldPlain('prefix_length', `Invalid prefix_length: '${raw}'`);
  const sites = ctx.urlSite !== null ? [ctx.urlSite] : [...ctx.shard.table('network').sites()];
  const candidates: NetworkRecord[] = [];
  for (const site of sites) {
    const p = ctx.shard.tree<NetworkRecord>(site, c.version).parent(c.addr, c.len)?.value;
    if (p && p.len >= min) candidates.push(p);
  }
  // The longest prefix wins, then the lowest id.
  candidates.sort((a, b) => b.len - a.len || a.id - b.id);
  const notFound = Errors.noSuch('Network', ctx.req.siteText ?? ctx.urlSite, key);
  return {
    kind: 'list',
    model: networkModel,
    records: candidates.slice(0, 1),
    order: (r) => [-(r as NetworkRecord).len, r.id],
    checks: { pickOne: { notFound: { status: notFound.status, body: errorEnvelope(notFound) } } },
  };
};

const related = (summary: string, run: (ctx: RequestContext, n: NetworkRecord) => RouteResult, query: QueryParam[] = []) =>
  view(summary, 'list', run, { query });

function networkApi(): Api {
  return {
    topLevel: true,
    nested: true,
    key: {
      help: 'The network id, or its CIDR (a bare address is its host prefix).',
      multiSegment: true,
      pattern: /^[A-Fa-f0-9:./]+$/,
    },
    routes: [
      ...resourceRoutes(() => networkModel, 'Network', {
        deleteQuery: [flag('force_delete', 'Delete it even when it has children: they move up to its parent.')],
      }),
      listRoute('reserved', {
        GET: view('Reserved networks', 'list', (ctx) => {
          const table = ctx.shard.table<NetworkRecord>('network');
          const scope = ctx.urlSite === null ? table.all() : table.inSite(ctx.urlSite);
          return list([...scope].filter((n) => n.state === 'reserved'));
        }),
      }),
      detailRoute('parent', {
        GET: view('Its parent network', 'object', (ctx, n) => {
          const p = parentOf(ctx.shard, n);
          if (!p) throw noneAbove(ctx);
          return { kind: 'object', model: networkModel, record: p };
        }),
      }),
      detailRoute('root', {
        GET: view('The root of its tree', 'object', (ctx, n) => {
          const a = ancestorsOf(ctx, n);
          if (a.length === 0) throw noneAbove(ctx);
          return { kind: 'object', model: networkModel, record: a[0] };
        }),
      }),
      detailRoute('ancestors', {
        GET: related(
          'Every network above it, root first',
          (ctx, n) => {
            const a = ancestorsOf(ctx, n);
            return list(ctx.query.flag('ascending', false) ? a.reverse() : a);
          },
          [flag('ascending', 'Nearest first instead.')],
        ),
      }),
      detailRoute('children', {
        GET: related('The networks directly under it', (ctx, n) => list(values(treeOf(ctx.shard, n).children(n.addr, n.len)))),
      }),
      detailRoute('descendants', {
        GET: related('Every network under it', (ctx, n) => list(values(treeOf(ctx.shard, n).descendants(n.addr, n.len)))),
      }),
      detailRoute('descendents', {
        GET: related('Deprecated spelling of descendants', (ctx, n) =>
          list(values(treeOf(ctx.shard, n).descendants(n.addr, n.len)), {
            headers: {
              Warning: '299 - "The `descendents` API endpoint is pending deprecation. Use the `descendants` API endpoint instead."',
            },
          }),
        ),
      }),
      detailRoute('siblings', {
        GET: related(
          'The networks beside it, under the same parent',
          (ctx, n) => {
            const includeSelf = ctx.query.flag('include_self', false);
            return list(siblingsOf(ctx, n).filter((s) => includeSelf || s.id !== n.id));
          },
          [flag('include_self', 'Include this network.')],
        ),
      }),
      detailRoute('subnets', {
        GET: related(
          'The networks and addresses under it',
          (ctx, n) => {
            const nets = ctx.query.flag('include_networks', true);
            const ips = ctx.query.flag('include_ips', true);
            const direct = ctx.query.flag('direct', false);
            if ((!nets && !ips) || n.len === width(n)) return list([]);
            const t = treeOf(ctx.shard, n);
            const all = direct ? values(t.children(n.addr, n.len)) : values(t.descendants(n.addr, n.len));
            return list(all.filter((s) => (s.len === width(s) ? ips : nets)));
          },
          [
            flag('include_networks', 'Include networks.', true),
            flag('include_ips', 'Include host addresses.', true),
            flag('direct', 'Only its children.'),
          ],
        ),
      }),
      detailRoute('supernets', {
        GET: related(
          'The networks above it',
          (ctx, n) => {
            const direct = ctx.query.flag('direct', false);
            const a = ancestorsOf(ctx, n);
            return list(direct ? a.slice(-1) : a);
          },
          [flag('direct', 'Only its parent.')],
        ),
      }),
      detailRoute('assignments', {
        GET: view(
          'The interfaces holding it',
          'list',
          (ctx, n) => ({ kind: 'list', model: assignmentModel, records: assignmentsOfNetwork(ctx.shard, n) }),
          { of: 'assignments' },
        ),
      }),
      nextRoute(() => networkModel, 'next_network', 'networks', false),
      nextRoute(() => networkModel, 'next_address', 'addresses', true),
      poolRoute(() => networkModel, 'next_network', 'networks', false),
      poolRoute(() => networkModel, 'next_address', 'addresses', true),
      utilizationRoute,
      availableRoute,
      keyRoute('closest_parent', {
        GET: view('The longest network containing this CIDR (which need not exist)', 'object', closestParent, {
          query: [integer('prefix_length', 'The shortest prefix length the answer may have.', 0)],
        }),
      }),
    ],
  };
}

export const networkModel: ResourceModel<NetworkRecord, Record<string, unknown>, typeof networkSchema> = {
  kind: 'network',
  name: 'Network',
  plural: 'Networks',
  collection: 'networks',
  schema: networkSchema,
  api: networkApi(),
  render,
  list: (ctx) => resourceList(ctx, networkModel),

  table: {
    naturalKey: { field: 'cidr', of: (n) => cidrKey(cidrOf(n)), normalize: (key) => cidrKey(keyCidr(key)) },
    derived: [attributeValuesIndex('network'), treeIndex],
    encode: (n) => ({ ...n, addr: n.addr.toString(16) }),
    decode: (v) => {
      const r = v as NetworkRecord & { addr: string };
      return { ...r, addr: BigInt(`0x${r.addr}`) };
    },
  },

  grants: {
    type: 'network',
    ancestry: (shard, n) => values(treeOf(shard, n).ancestors(n.addr, n.len)).reverse(),
  },

  reads: {
    filters,
    attributes: (n) => n.attributes,
    expand: {
      site_id: (n, shard) => ({ model: shard.model('site'), record: shard.table('site').get(n.siteId)! }),
      parent_id: (n, shard) => {
        const p = parentOf(shard, n);
        return p ? { model: networkModel, record: p } : null;
      },
    },
  },

  writes: {
    onDelete: [
      protectChildren,
      // Interfaces holding it drop it from their addresses: a cache refresh, no Change (docs/api.md §9.9).
      {
        kind: 'interface',
        via: 'network',
        policy: 'set-null',
        change: false,
        unset: (i: AssignmentHolder, n) => ({ ...i, assignments: i.assignments.filter((a) => a.networkId !== n.id) }),
      },
    ],
    parse(_ctx, body, method) {
      return validateFields(networkSchema, body, method);
    },
    create(ctx, v, site) {
      let text: string;
      if (v.cidr !== undefined) text = v.cidr as string;
      else if (v.network_address !== undefined && v.network_address !== null && v.prefix_length !== undefined && v.prefix_length !== null) {
        text = `${v.network_address}/${v.prefix_length}`;
      } else throw Errors.validation('Invalid CIDR: None. Must be IPv4/IPv6 notation.');
      const c = parseCidr(text);
      if (c === 'invalid') throw Errors.fieldPlain('cidr', notAppearNetwork(text));
      if (c === 'host-bits') throw Errors.fieldPlain('cidr', `${text} has host bits set`);
      return insertNetwork(ctx, site!, c, (v.state as NetworkState | undefined) ?? 'allocated', v.attributes);
    },
    update(ctx, current, v, method) {
      const attributes =
        'attributes' in v
          ? resolveAttributes(ctx, 'Network', current.siteId, v.attributes, current.attributes, method)
          : current.attributes;
      const next: NetworkRecord = {
        ...current,
        state: (v.state as NetworkState | undefined) ?? current.state,
        attributes,
        valueIds: valueIdsFor(ctx.tx, current, attributes),
      };
      ctx.tx.update(networkModel, current, next);
      return next;
    },
  },
};
