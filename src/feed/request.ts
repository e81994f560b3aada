/**
 * What a feed request asks for: its path, its filters and where it resumes.
 *
 * `/api/changes/stream/` has the shape of a Change detail (`/api/changes/<id>/`)
 * and the router would take `stream` for an id and answer 404. The stream is
 * not a resource route: it holds its connection open, and over WebSocket it
 * is not even an HTTP exchange. So both transports recognise these two paths
 * with `feedPath` before any routing (app.ts for SSE, the uWS `ws` routes in
 * server.ts), and the router never sees them.
 */
import { Errors } from '../errors.js';
import { QueryParams } from '../query/params.js';
import type { QueryParam } from '../routes/route.js';
import { parseId } from '../schema/id.js';
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';
import type { FeedFilter } from './hub.js';

const FEED_PATH = /^\/api\/(?:sites\/([^/]+)\/)?changes\/stream\/?$/;

/** The two feed paths, in OpenAPI's template form (the documentation, and the uWS WebSocket routes in http/feed-transport.ts). */
export const FEED_PATHS = ['/api/changes/stream/', '/api/sites/{site_id}/changes/stream/'] as const;

/** The feed's query parameters: what `feedRequest` reads, as the OpenAPI document lists them. */
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

/** The site segment of a feed path ('' for every site), or null when `path` is no feed path. */
export function feedPath(path: string): string | null {
  const m = FEED_PATH.exec(path);
  return m ? (m[1] ?? '') : null;
}

/**
 * The filter and resume point of a feed request; 400 for a bad filter or
 * resume id, 404 for an unknown site. `?after=` wins over Last-Event-ID (an
 * explicit URL over what an EventSource resends on reconnect). Both are read
 * alike: a resume point beyond `head`, the newest Change id, names a Change
 * that does not exist (the consumer's log is not this server's), and a
 * stream from there would stay silent until the ids caught up, so it is 400
 * naming the head rather than an open stream that never speaks.
 */
export function feedRequest(
  siteSegment: string,
  query: string,
  lastEventId: string,
  siteExists: (id: number) => boolean,
  head: number,
): { filter: FeedFilter; after: number } {
  let site: number | null = null;
  if (siteSegment !== '') {
    const id = parseId(siteSegment);
    if (id === undefined || !siteExists(id)) throw Errors.noSuch('Site', null, siteSegment);
    site = id;
  }
  const q = new QueryParams(query);
  const [event, resourceName, afterParam] = FEED_QUERY;
  const filter = { site, event: q.choice(event.name, EVENTS) ?? null, resourceName: q.choice(resourceName.name, CHANGE_RESOURCES) ?? null };
  const after = q.get(afterParam.name);
  if (after !== undefined && after !== '') return { filter, after: resumePoint(afterParam.name, after, head) };
  if (lastEventId !== '') return { filter, after: resumePoint('Last-Event-ID', lastEventId.trim(), head) };
  return { filter, after: -1 };
}

/** A resume id as `field` gives it: digits (an optional sign), from 0 up to `head`. */
function resumePoint(field: string, text: string, head: number): number {
  if (!/^[-+]?\d+$/.test(text)) throw Errors.field(field, 'A valid integer is required.');
  const id = Number(text);
  if (id < 0) throw Errors.field(field, 'Ensure this value is greater than or equal to 0.');
  if (id > head) throw Errors.field(field, `Ensure this value is less than or equal to ${head}, the newest Change id.`);
  return id;
}
