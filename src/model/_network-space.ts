/**
 * What a network's prefix tree answers about the space inside it (issue 25):
 * its utilization (`utilization/`, and the list filters on it) and its free
 * space (`available/`). Both read counts the tree keeps on its nodes
 * (src/ip/radix-tree.ts), so a utilization costs O(prefix bits) and a page of
 * free blocks O(prefix bits + page), whatever the network holds.
 */
import { Errors } from '../errors.js';
import { spanOf } from '../ip/_bits.js';
import { formatCidr } from '../ip/address.js';
import type { FilterSpec } from '../query/filters.js';
import { FORMAT, integer, LIMIT, OFFSET } from '../routes/params.js';
import type { Route, RouteResult } from '../routes/route.js';
import { detailRoute, view } from '../routes/standard.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import { pyInt } from './_allocation.js';
import { cidrText, type NetworkRecord, treeOf, widthOf } from './_networks.js';

/** A network's utilization: counts of addresses as decimal strings (an IPv6 /32 has 2^96), the rest as numbers. */
export function utilizationOf(shard: ShardState, n: NetworkRecord) {
  const tree = treeOf(shard, n);
  const u = tree.usage(n.addr, n.len);
  const size = spanOf(n.len, widthOf(n));
  return {
    network: cidrText(shard, n),
    size: String(size),
    used: String(u.used),
    free: String(size - u.used),
    utilization: tree.fill(n.addr, n.len),
    children: u.children,
    addresses: u.hosts,
  };
}

const decimal = (help: string) => ({ type: 'string', pattern: '^[0-9]+$', description: help });

const UTILIZATION_SCHEMA = {
  type: 'object',
  required: ['network', 'size', 'used', 'free', 'utilization', 'children', 'addresses'],
  properties: {
    network: { type: 'string', description: 'The network, as its CIDR.' },
    size: decimal('Addresses in the network (a decimal string: an IPv6 prefix may hold 2^128).'),
    used: decimal('Addresses inside any network under it, each counted once however deep networks nest.'),
    free: decimal('size − used.'),
    utilization: { type: 'number', minimum: 0, maximum: 1, description: 'used ÷ size.' },
    children: { type: 'integer', description: 'Networks directly under it.' },
    addresses: { type: 'integer', description: 'Host addresses (/32, /128) anywhere under it.' },
  },
  examples: [
    { network: '10.0.0.0/16', size: '65536', used: '386', free: '65150', utilization: 0.005889892578125, children: 4, addresses: 3 },
  ],
};

export const utilizationRoute: Route = detailRoute('utilization', {
  GET: view(
    'How much of this network the networks under it take',
    'json',
    (ctx: RequestContext, n: NetworkRecord): RouteResult => ({
      kind: 'raw',
      status: 200,
      body: JSON.stringify(utilizationOf(ctx.shard, n)),
    }),
    { schema: UTILIZATION_SCHEMA },
  ),
});

const fill = (n: NetworkRecord, shard: ShardState) => treeOf(shard, n).fill(n.addr, n.len);

/** `?utilization__lt=0.8`: parents with room, for an allocator choosing where to allocate. */
export const utilizationFilters: FilterSpec<NetworkRecord>[] = [
  { param: 'utilization__lt', type: 'number', compare: '<', value: fill, help: 'Only networks whose utilization (0 to 1) is below this.' },
  { param: 'utilization__gt', type: 'number', compare: '>', value: fill, help: 'Only networks whose utilization (0 to 1) is above this.' },
];

/**
 * The free blocks of `n` as a list made while it is sent: each batch resumes after the last block of the one
 * before (so a network changed between two chunks is listed as it is then), the first skips the page's offset
 * by the tree's counts. Only a page's envelope asks for the count.
 */
function available(ctx: RequestContext, n: NetworkRecord): RouteResult {
  const W = widthOf(n);
  const raw = ctx.query.get('prefix_length');
  let len: number | undefined;
  if (raw !== undefined && raw !== '') {
    const v = pyInt(raw);
    if (v === null || v < n.len || v > W) throw Errors.field('prefix_length', `Must be an integer from ${n.len} to ${W}.`);
    len = v;
  }
  const compress = ctx.config.compressIpv6;
  const only = len === undefined ? {} : { len };
  return {
    kind: 'items',
    count: () => treeOf(ctx.shard, n).freeCount(n.addr, n.len, len),
    items: (skip) => {
      let from: bigint | undefined;
      return (max) => {
        const blocks = treeOf(ctx.shard, n).freeSpace(n.addr, n.len, { max, ...only, ...(from === undefined ? { skip } : { from }) });
        const last = blocks.at(-1);
        if (last) from = last.addr + spanOf(last.len, W);
        return blocks.map((b) => `"${formatCidr({ version: n.version, addr: b.addr, len: b.len }, compress)}"`);
      };
    },
  };
}

export const availableRoute: Route = detailRoute('available', {
  GET: {
    summary: 'The free space inside this network, in address order: its maximal free blocks, or every free block of prefix_length',
    permission: 'read',
    query: [
      LIMIT,
      OFFSET,
      FORMAT,
      integer('prefix_length', 'Every free block of this length (from the network’s own to 32 or 128) instead of the maximal ones.'),
    ],
    response: {
      status: 200,
      shape: 'list',
      schema: { type: 'string', description: 'A free CIDR block.' },
      help: 'A bare list (streamed), or a page when `limit` is given. Free: inside no network under this one.',
    },
    run: available,
  },
});
