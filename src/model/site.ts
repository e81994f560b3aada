/**
 * Site (docs/api.md §19): a namespace and the unit of placement — a
 * site and everything in it live on shard `id % SHARDS`. Names are unique
 * across all sites, which the main thread enforces (it sees every shard).
 */
import { demandSuperuser } from '../auth/permissions.js';
import { standardRoutes } from '../routes/standard.js';
import { validateFields } from '../schema/validate.js';
import { grantsRoute } from '../shard/object-grants.js';
import type { ShardState } from '../shard/state.js';
import type { Kind } from '../store/kinds.js';
import type { SiteRecord } from '../types/stored.js';
import { applyFilters } from './_resource.js';
import { duplicateName, renderSite as render, siteSchema } from './_site.js';
import type { DeleteRule, ResourceModel } from './model.js';
import { claimSiteName } from './site-directory.js';

function* idsInSite(shard: ShardState, kind: Kind, site: number): Iterable<number> {
  for (const r of shard.table(kind).inSite(site)) yield r.id;
}

/** Whatever a site holds blocks its delete, checked in this order (docs/api.md §9.9). */
const SITE_GUARDS: DeleteRule<SiteRecord>[] = (
  ['attribute', 'circuit', 'device', 'interface', 'network', 'protocol', 'protocoltype', 'value'] as const
).map((kind) => ({ kind, via: (shard, s) => idsInSite(shard, kind, s.id), policy: 'protect', field: 'site' }));

export const siteModel: ResourceModel<SiteRecord, Record<string, unknown>, typeof siteSchema> = {
  kind: 'site',
  name: 'Site',
  plural: 'Sites',
  collection: 'sites',
  schema: siteSchema,
  api: {
    topLevel: true,
    nested: false,
    key: { help: 'The site id.', isSite: true },
    routes: [
      ...standardRoutes({
        noun: 'site',
        nouns: 'sites',
        list: ['GET', 'POST'],
        detail: ['GET', 'PUT', 'PATCH', 'DELETE'],
        create: 'superuser',
      }),
      grantsRoute('site'),
    ],
  },
  render,
  list: (ctx) => ({ records: applyFilters(ctx, siteModel, ctx.shard.table<SiteRecord>('site').all()) }),

  table: {
    db: 'sites',
  },

  grants: {
    type: 'site',
  },

  reads: {
    filters: [{ param: 'name', type: 'string', value: (s) => s.name }],
  },

  writes: {
    // Site names are unique across shards: the main thread claims them (site-directory.ts).
    beforeForward: claimSiteName,
    onDelete: SITE_GUARDS,
    parse(ctx, body, method) {
      if (method === 'POST') demandSuperuser(ctx.principal);
      return validateFields(siteSchema, body, method);
    },
    create(ctx, v) {
      const claim = ctx.req.siteClaim;
      // The main thread allocates every site id (site-directory.ts); a create without one is a bug.
      if (claim?.kind !== 'create') throw new Error('site create forwarded without the id the main thread allocated');
      const id = claim.siteId;
      const site: SiteRecord = { id, siteId: id, name: v.name as string, description: (v.description as string | undefined) ?? '' };
      ctx.tx.create(siteModel, site);
      ctx.directory.upsertSites = [{ id, name: site.name }];
      return site;
    },
    update(ctx, current, v) {
      // The main thread judges name uniqueness (it sees every shard) but leaves the verdict to be
      // reported here, after lookup (404), permission (403) and field validation (400) (docs/api.md §1.6).
      const claim = ctx.req.siteClaim;
      if (v.name !== undefined && v.name !== current.name && claim?.kind === 'rename' && claim.nameTaken) throw duplicateName();
      const next: SiteRecord = {
        ...current,
        name: (v.name as string | undefined) ?? current.name,
        description: (v.description as string | undefined) ?? current.description,
      };
      ctx.tx.update(siteModel, current, next);
      ctx.directory.upsertSites = [{ id: next.id, name: next.name }];
      return next;
    },
    remove(ctx, site) {
      // The site's Changes go with it, this Delete included (docs/api.md §9.9).
      ctx.tx.dropChanges(site.id);
      ctx.tx.remove(siteModel, site);
      ctx.directory.deleteSites = [site.id];
    },
  },
};

export function siteOf(shard: ShardState, id: number): SiteRecord | undefined {
  return shard.table<SiteRecord>('site').get(id);
}
