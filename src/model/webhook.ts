/**
 * Webhook (README, Webhooks): a subscription to the Change log, delivered by
 * HTTP POST. Like users, webhooks live on the main thread, which runs their
 * deliveries (webhooks/dispatcher.ts); this module is the resource: its
 * records, its schema, its routes and how a body becomes a record. The
 * directory behind the routes is webhooks/directory.ts.
 *
 * The secret is write-only: taken on POST, PUT and PATCH, never rendered,
 * never logged.
 */
import { Errors, pyType } from '../errors.js';
import { integer, LIMIT, OFFSET } from '../routes/params.js';
import type { Api } from '../routes/route.js';
import { defineSchema, Field } from '../schema/fields.js';
import { validateFields } from '../schema/validate.js';
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';

export interface WebhookRecord {
  id: number;
  /** http:// or https://, without credentials. */
  url: string;
  /** The key of each delivery's HMAC-SHA256 signature. */
  secret: string;
  /** The feed's filters (feed/hub.ts FeedFilter): null matches everything. */
  siteId: number | null;
  resourceName: string | null;
  event: string | null;
  active: boolean;
}

/** Where a webhook's deliveries stand, stored apart from the subscription since it changes with every delivery. */
export interface WebhookCursor {
  /** The last Change id the receiver acknowledged (2xx): deliveries resume after it. */
  cursor: number;
  /** Attempts failed in a row since the last 2xx. */
  failures: number;
}

/** One delivery attempt, as `deliveries/` shows it. */
export interface DeliveryAttempt {
  /** The hook's attempt number (1, 2, …). */
  n: number;
  /** Epoch milliseconds when it was sent. */
  at: number;
  /** Its X-Netsot-Delivery. */
  delivery: string;
  first: number;
  last: number;
  changes: number;
  bytes: number;
  /** The receiver's status code, or null when none came (then `error` says why). */
  status: number | null;
  error: string | null;
  ms: number;
  /** Epoch milliseconds of the retry a failure scheduled; null after a 2xx. */
  nextRetryAt: number | null;
}

export type WebhookStatus = 'active' | 'failing' | 'inactive';

/** What the directory knows of a hook besides its record (webhook/delivery.ts). */
export interface WebhookProgress {
  status: WebhookStatus;
  cursor: number;
  failures: number;
  lag: number;
}

export const webhookSchema = defineSchema('Webhook', 'API endpoint that allows Webhooks to be viewed or edited.', {
  id: Field.id(),
  url: Field.string({ maxLength: 2048, requiredOn: ['POST', 'PUT'], help: 'Where Changes are POSTed: an http:// or https:// URL.' }),
  secret: Field.string({
    maxLength: 255,
    requiredOn: ['POST'],
    writeOnly: true,
    help: 'The key of X-Netsot-Signature (HMAC-SHA256 of the body). Write-only; kept when a PUT or PATCH leaves it out.',
  }),
  site_id: Field.integer({ nullable: true, default: null, help: 'Only Changes of this site; null for every site.' }),
  resource_name: Field.choice(CHANGE_RESOURCES, { nullable: true, default: null, help: 'Only Changes of this resource; null for all.' }),
  event: Field.choice(EVENTS, { nullable: true, default: null, help: 'Only Changes of this event; null for all.' }),
  active: Field.boolean({ default: true, help: 'Deliveries run while true; set false to pause (nothing is skipped on resuming).' }),
  status: Field.choice(['active', 'failing', 'inactive'], {
    readOnly: true,
    help: '`failing` once several attempts in a row failed; retries go on, capped, until the receiver answers 2xx.',
  }),
  cursor: Field.integer({ readOnly: true, help: 'The last Change id the receiver acknowledged; deliveries resume after it.' }),
  failures: Field.integer({ readOnly: true, help: 'Attempts failed in a row since the last 2xx.' }),
  lag: Field.integer({ readOnly: true, help: 'Change ids committed past the cursor while deliveries are due (0 when caught up).' }),
});

const hookDetail = (summary: string) => ({
  summary,
  permission: 'admin' as const,
  query: [],
  response: { status: 200 as const, shape: 'object' as const },
});

/** /api/webhooks/: served on the main thread, which runs the deliveries (routes/route.ts MainHandler). */
export const webhookApi: Api = {
  topLevel: true,
  nested: false,
  key: { help: 'The webhook id.' },
  routes: [
    {
      shape: 'list',
      methods: {
        GET: {
          summary: 'List webhooks (a site admin sees those of its sites)',
          permission: 'admin',
          query: [LIMIT, OFFSET],
          response: { status: 200, shape: 'list' },
          main: (call) => call.webhooks.list(call.user!, call.query, call.link),
        },
        POST: {
          summary: 'Create a webhook: Changes from now on are POSTed to its URL',
          permission: 'admin',
          query: [],
          body: 'object',
          response: { status: 201, shape: 'object' },
          main: (call) => call.webhooks.create(call.user!, call.body),
        },
      },
    },
    {
      shape: 'detail',
      methods: {
        GET: { ...hookDetail('Get a webhook and where its deliveries stand'), main: (call) => call.webhooks.detail(call.user!, call.key!) },
        PUT: {
          ...hookDetail('Replace a webhook (its secret is kept unless given)'),
          body: 'object',
          main: (call) => call.webhooks.update(call.user!, call.key!, call.body, 'PUT'),
        },
        PATCH: {
          ...hookDetail('Change some of a webhook'),
          body: 'object',
          main: (call) => call.webhooks.update(call.user!, call.key!, call.body, 'PATCH'),
        },
        DELETE: {
          summary: 'Delete a webhook',
          permission: 'admin',
          query: [],
          response: { status: 204, shape: 'empty' },
          main: (call) => call.webhooks.remove(call.user!, call.key!),
        },
      },
    },
    {
      shape: 'detail-route',
      segment: 'deliveries',
      methods: {
        GET: {
          summary: "The webhook's recent delivery attempts, newest first",
          permission: 'admin',
          query: [],
          response: {
            status: 200,
            shape: 'json',
            help:
              '[{"attempt", "delivery", "at", "first_change_id", "last_change_id", "changes", "bytes", "status_code", "error", ' +
              '"ms", "next_retry_at"}]: the last attempts and the last failed ones.',
          },
          main: (call) => call.webhooks.deliveries(call.user!, call.key!),
        },
      },
    },
    {
      shape: 'detail-route',
      segment: 'redeliver',
      methods: {
        POST: {
          summary: 'Move the cursor: deliver again every Change after the id given',
          permission: 'admin',
          query: [integer('after', 'The Change id to resume after (required): 0 delivers the whole log again.')],
          response: { status: 200, shape: 'object' },
          main: (call) => call.webhooks.redeliver(call.user!, call.key!, call.query.integer('after')),
        },
      },
    },
  ],
};

/** What a body sets, by record field; absent fields are left as they are (PATCH) or reset (PUT, by the caller). */
export type WebhookFields = Partial<Omit<WebhookRecord, 'id'>>;

/**
 * The fields a POST, PUT or PATCH body sets, checked as far as the body alone can say (the site's existence
 * and the URL's network are the directory's to check); 400 naming each field at fault.
 */
export function webhookFields(body: unknown, method: 'POST' | 'PUT' | 'PATCH'): WebhookFields {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
  const raw = body as Record<string, unknown>;
  const v = validateFields(webhookSchema, raw, method);
  // Validation trims strings; a secret is used as given, so one with surrounding whitespace is refused, not altered.
  if (typeof raw.secret === 'string' && raw.secret !== raw.secret.trim())
    throw Errors.field('secret', 'The secret may not begin or end with whitespace.');
  const out: WebhookFields = {};
  if (v.url !== undefined) out.url = webhookUrl(v.url as string).href;
  if (v.secret !== undefined) out.secret = v.secret as string;
  if (v.site_id !== undefined) out.siteId = v.site_id as number | null;
  if (v.resource_name !== undefined) out.resourceName = v.resource_name as string | null;
  if (v.event !== undefined) out.event = v.event as string | null;
  if (v.active !== undefined) out.active = v.active as boolean;
  return out;
}

/** An http(s) URL with a host and no credentials, or 400 on `url`. */
export function webhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw Errors.field('url', 'Enter a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw Errors.field('url', 'Only http:// and https:// URLs are accepted.');
  if (url.hostname === '') throw Errors.field('url', 'Enter a valid URL.');
  // They would reach the log and every reader of the hook; the secret is what authenticates a delivery.
  if (url.username !== '' || url.password !== '') throw Errors.field('url', 'The URL may not carry a user name or password.');
  return url;
}

export function renderWebhook(h: WebhookRecord, p: WebhookProgress): Record<string, unknown> {
  return {
    id: h.id,
    url: h.url,
    site_id: h.siteId,
    resource_name: h.resourceName,
    event: h.event,
    active: h.active,
    status: p.status,
    cursor: p.cursor,
    failures: p.failures,
    lag: p.lag,
  };
}

export function renderAttempt(a: DeliveryAttempt): Record<string, unknown> {
  return {
    attempt: a.n,
    delivery: a.delivery,
    at: a.at,
    first_change_id: a.first,
    last_change_id: a.last,
    changes: a.changes,
    bytes: a.bytes,
    status_code: a.status,
    error: a.error,
    ms: Math.round(a.ms * 10) / 10,
    next_retry_at: a.nextRetryAt,
  };
}
