/**
 * The system routes: endpoints outside the collections, each on a path of its own, served on the main thread
 * by http/system.ts. Declared here like every route, so the lifecycle gives them OPTIONS, 405 with Allow and
 * HEAD, the router matches them, metrics name them by their path, and the OpenAPI document lists them:
 *
 * - the probes (README, Operating netsot; the runbook in Past one machine) and /metrics: public and cheap,
 *   for load balancers and monitors;
 * - /docs/: the API reference, its OpenAPI document and the files both pages load: public;
 * - /admin/backup/: a backup while serving, superusers only;
 * - the live change feed over Server-Sent Events (feed/request.ts); the same paths upgrade to a WebSocket
 *   (http/feed-transport.ts reads them from here).
 */
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';
import type { QueryParam, Route } from './route.js';

/** The API reference's tags of the system routes (a collection's own tag, `changes`, is described there). */
export const SYSTEM_TAGS: Readonly<Record<string, string>> = {
  probes: 'Liveness, readiness and metrics, for load balancers and monitors.',
  docs: 'This reference: the page, its OpenAPI document and the files the pages load.',
  admin: 'Operator endpoints outside the API, for superusers.',
};

/** The feed's query parameters: what feed/request.ts reads, in this order. */
export const FEED_QUERY: readonly QueryParam[] = [
  { name: 'event', type: 'string', help: 'Only Changes of this event.', choices: EVENTS },
  { name: 'resource_name', type: 'string', help: 'Only Changes of this resource.', choices: CHANGE_RESOURCES },
  {
    name: 'after',
    type: 'integer',
    help:
      'Resume: the Changes after this id, from the store, then live ones. Wins over Last-Event-ID; without either the stream ' +
      'starts with the next commit. An id beyond the newest Change is 400.',
  },
];

const LAST_EVENT_ID: QueryParam = {
  name: 'Last-Event-ID',
  type: 'integer',
  help:
    'Resume after this Change id (what an EventSource resends on reconnect); `after` wins over it. An id beyond the ' +
    'newest Change is 400, as for `after`.',
};

const FEED_ANSWER =
  'Server-Sent Events, one `change` event per Change in id order (its id as the event id, its data as the changes list ' +
  'renders it), `:` comments as heartbeats; a consumer too slow to keep its buffer gets an `overflow` event ' +
  '(`{"resume_after": id}`) and the stream ends. The same path upgrades to a WebSocket, whose messages are JSON arrays ' +
  'of Changes.';

function feedRoute(path: string, summary: string): Route {
  return {
    shape: 'system',
    path,
    name: 'Change Stream',
    tag: 'changes',
    methods: {
      GET: {
        summary,
        permission: 'read',
        query: FEED_QUERY,
        headers: [LAST_EVENT_ID],
        response: { status: 200, shape: 'json', media: ['text/event-stream'], help: FEED_ANSWER },
        errors: { 400: true, 404: true, 429: true, 503: true },
        system: 'feed',
      },
    },
  };
}

const STATUS = { type: 'object', required: ['status'], properties: { status: { type: 'string' } } };

export const SYSTEM_ROUTES: Route[] = [
  {
    shape: 'system',
    path: '/healthz',
    publicPath: true,
    name: 'Liveness',
    tag: 'probes',
    methods: {
      GET: {
        summary: 'Liveness: 200 while the process runs.',
        permission: 'public',
        query: [],
        response: { status: 200, shape: 'json', help: 'Alive.', schema: STATUS },
        system: 'healthz',
      },
    },
  },
  {
    shape: 'system',
    path: '/readyz',
    publicPath: true,
    name: 'Readiness',
    tag: 'probes',
    methods: {
      GET: {
        summary:
          'Readiness: 200 while every shard serves, so this node answers reads; with `role=leader`, only on the node that takes writes.',
        permission: 'public',
        query: [
          {
            name: 'role',
            type: 'string',
            help:
              '`leader`: 200 only on the node that holds the write lease and renewed it lately (a load balancer sends writes there), ' +
              '503 on a standby, a node taking over or one cut off from the database. On LMDB the one node is the leader.',
            choices: ['leader'],
          },
        ],
        response: {
          status: 200,
          shape: 'json',
          help: 'Ready.',
          schema: { ...STATUS, properties: { ...STATUS.properties, shards: { type: 'integer' }, role: { type: 'string' } } },
        },
        errors: { 400: 'An unknown role.', 503: 'Not ready (or not the leader), with Retry-After.' },
        system: 'readyz',
      },
    },
  },
  {
    shape: 'system',
    path: '/metrics',
    publicPath: true,
    name: 'Metrics',
    tag: 'probes',
    methods: {
      GET: {
        summary: 'Metrics in the Prometheus text format: requests by route template, shards, store, feed and webhooks.',
        permission: 'public',
        query: [],
        response: { status: 200, shape: 'json', media: ['text/plain'], help: 'The Prometheus text format (version 0.0.4).' },
        errors: { 404: 'METRICS is off.' },
        system: 'metrics',
      },
    },
  },
  {
    shape: 'system',
    path: '/docs/',
    publicPath: true,
    name: 'Docs',
    tag: 'docs',
    methods: {
      GET: {
        summary: 'This API reference, as a page (Swagger UI over the OpenAPI document).',
        permission: 'public',
        query: [],
        response: { status: 200, shape: 'json', media: ['text/html'], help: 'The page.' },
        system: 'docs',
      },
    },
  },
  {
    shape: 'system',
    path: '/docs/openapi.json',
    publicPath: true,
    name: 'OpenAPI Document',
    tag: 'docs',
    methods: {
      GET: {
        summary: 'This OpenAPI document, its `servers` naming the origin asked; with an ETag, so If-None-Match gets 304.',
        permission: 'public',
        query: [
          {
            name: 'v',
            type: 'string',
            help: "The document's version, as the pages link it: under it the answer may be kept for good (immutable).",
          },
        ],
        headers: [{ name: 'If-None-Match', type: 'string', help: 'An ETag of the copy held: 304 when it is current.' }],
        response: { status: 200, shape: 'json', help: 'The OpenAPI 3.1 document.', schema: { type: 'object' } },
        system: 'openapi',
      },
    },
  },
  {
    shape: 'system',
    path: '/docs/assets/{name}',
    publicPath: true,
    name: 'Docs Asset',
    tag: 'docs',
    methods: {
      GET: {
        summary: 'A file the docs page and the browsable view load (scripts, stylesheets, the icon), served offline.',
        permission: 'public',
        query: [],
        response: { status: 200, shape: 'json', media: ['text/javascript', 'text/css', 'image/svg+xml'], help: 'The file.' },
        errors: { 404: true },
        system: 'asset',
      },
    },
  },
  {
    shape: 'system',
    path: '/admin/backup/',
    name: 'Backup',
    tag: 'admin',
    methods: {
      POST: {
        summary: 'Write a backup to BACKUP_DIR/<name> while serving (LMDB; PostgreSQL is backed up by its own tools).',
        permission: 'superuser',
        query: [],
        body: 'backup',
        bodyHelp: 'The name (one path segment); a timestamped one when absent. An existing backup is never overwritten.',
        response: {
          status: 201,
          shape: 'json',
          help: 'Written: where, how large, how long it took.',
          schema: {
            type: 'object',
            required: ['name', 'path', 'bytes', 'duration_ms'],
            properties: {
              name: { type: 'string' },
              path: { type: 'string' },
              bytes: { type: 'integer' },
              duration_ms: { type: 'integer' },
            },
          },
        },
        errors: {
          400: 'A bad name or body.',
          403: true,
          409: 'No BACKUP_DIR, a PostgreSQL store, a backup by that name, or one already running.',
          413: true,
          415: true,
          507: 'The disk is full.',
        },
        system: 'backup',
      },
    },
  },
  feedRoute('/api/changes/stream/', 'Follow Changes as they commit.'),
  feedRoute('/api/sites/{site_id}/changes/stream/', "Follow a site's Changes as they commit."),
];
