/**
 * What a feed request asks for: its filters and where it resumes. The two
 * paths, their query and headers are declared with the system routes
 * (routes/system.ts); SSE (http/system.ts) and the WebSocket upgrade
 * (http/feed-transport.ts) both read a request through here.
 */
import { Errors } from '../errors.js';
import { QueryParams } from '../query/params.js';
import { FEED_QUERY } from '../routes/system.js';
import { parseId } from '../schema/id.js';
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';
import type { FeedFilter } from './hub.js';

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
