/**
 * Change (docs/api.md §10): the immutable log. Rows live in the
 * shard's ChangeLog index; the full record (resource payload and diff, as
 * JSON text fixed at write time) is read from the store when rendered.
 */
import { Type } from '@sinclair/typebox';
import { detailRoute, view } from '../routes/standard.js';
import { defineSchema, Field, renderedObject } from '../schema/fields.js';
import type { ChangeRow } from '../shard/changelog.js';
import type { ShardState } from '../shard/state.js';
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';
import { fullChange } from '../store/store.js';
import type { SiteRecord } from '../types/stored.js';
import { changeText } from './_change-text.js';
import { renderSite, siteSchema } from './_site.js';
import type { ResourceModel } from './model.js';

export const changeSchema = defineSchema('Change', 'Read-only API endpoint that allows Changes to be viewed.', {
  id: Field.id(),
  site: Field.json(renderedObject(siteSchema), {
    readOnly: true,
    nullable: true,
    help: 'The site of the changed object, as it is now; null once the site is deleted.',
  }),
  user: Field.json(Type.Object({ id: Type.Integer(), email: Type.String() }), { readOnly: true, help: 'Who made the change.' }),
  change_at: Field.integer({ readOnly: true }),
  event: Field.choice(EVENTS, { readOnly: true }),
  resource_name: Field.choice(CHANGE_RESOURCES, { readOnly: true }),
  resource_id: Field.integer({ readOnly: true }),
  resource: Field.json(Type.Object({ id: Type.Integer() }, { additionalProperties: true }), {
    readOnly: true,
    help: 'The object as the API rendered it when the change was made (before a Delete): an object of resource_name.',
  }),
});

/** A Change's full record: from memory while its commit is in flight (ShardState.pendingChanges), else from the store. */
function storedRecord(shard: ShardState, row: ChangeRow) {
  const pending = shard.pendingChanges.get(row.id);
  const rec = pending ? fullChange(pending) : shard.store.change(row.siteId, row.id);
  if (!rec) throw new Error(`change ${row.id} indexed but not stored`);
  return rec;
}

export const changeModel: ResourceModel<ChangeRow, Record<string, unknown>, typeof changeSchema> = {
  kind: 'change',
  name: 'Change',
  plural: 'Changes',
  collection: 'changes',
  schema: changeSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The change id.' },
    routes: [
      {
        shape: 'list',
        methods: {
          GET: view('List changes, newest first', 'list', 'list', {
            query: [
              { name: 'event', type: 'string', choices: EVENTS, help: 'Only changes of this event.' },
              { name: 'resource_name', type: 'string', choices: CHANGE_RESOURCES, help: 'Only changes of this kind of object.' },
              { name: 'resource_id', type: 'integer', help: 'Only changes of the object with this id.' },
            ],
          }),
        },
      },
      { shape: 'detail', methods: { GET: view('Get a change, with its resource_diff', 'object', 'detail') } },
      detailRoute('diff', {
        GET: view('Its resource_diff alone', 'json', (ctx, row) => ({ kind: 'raw', status: 200, body: storedRecord(ctx.shard, row).diff })),
      }),
    ],
  },
  // What `serialize` writes (_change-text.ts), as values.
  render(row, shard) {
    const rec = storedRecord(shard, row);
    const site = shard.table<SiteRecord>('site').get(row.siteId);
    return {
      id: rec.id,
      site: site ? renderSite(site) : null,
      user: { id: rec.userId, email: rec.email },
      change_at: rec.at,
      event: rec.event,
      resource_name: rec.resourceName,
      resource_id: rec.resourceId,
      resource: JSON.parse(rec.resource),
    };
  },
  list(ctx, site) {
    const event = ctx.query.choice('event', EVENTS);
    const resourceName = ctx.query.choice('resource_name', CHANGE_RESOURCES);
    const resourceId = ctx.query.integer('resource_id');
    const e = event === undefined ? -1 : EVENTS.indexOf(event);
    const r = resourceName === undefined ? -1 : CHANGE_RESOURCES.indexOf(resourceName);
    const records = ctx.shard.changes.newestFirst(
      (s, ev, res, rid) =>
        (site === null || s === site) && (e < 0 || ev === e) && (r < 0 || res === r) && (resourceId === undefined || rid === resourceId),
    );
    return { records, newestFirst: true, order: (row) => [row.at, row.id] };
  },

  reads: {
    find(ctx, id) {
      return ctx.shard.changes.find(id);
    },
    serialize(ctx, row, detail) {
      const rec = storedRecord(ctx.shard, row);
      const text = changeText(rec, ctx.site(row.siteId));
      return detail ? `${text.slice(0, -1)},"resource_diff":${rec.diff}}` : text;
    },
  },
};
