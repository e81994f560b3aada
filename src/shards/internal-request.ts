/**
 * The main thread's own questions to shards (resolve a natural key, a user's
 * object grants, a bulk part's decision, reload, apply), built in one place.
 * They run as SYSTEM, not as a client: nothing is refused to them.
 */

import type { InternalRequest, Unsent } from '../shard/protocol.js';
import type { LinkBase } from '../types/api.js';
import type { Principal } from '../types/auth.js';

/** Who the main thread's own questions run as. */
export const SYSTEM: Principal = Object.freeze({ id: 0, email: '', superuser: true, grants: Object.freeze({}) });

const NO_LINK: LinkBase = Object.freeze({ scheme: 'http', host: '', path: '' });

type Own<O extends InternalRequest['op']> = Omit<
  Extract<InternalRequest, { op: O }>,
  'seq' | 'op' | 'method' | 'site' | 'query' | 'principal' | 'link'
>;

/** The request `op` with its own fields; `collection` defaults to sites (it names the kind a resolve searches). */
export function internalRequest<O extends InternalRequest['op']>(
  op: O,
  own: Partial<Pick<InternalRequest, 'collection'>> & Omit<Own<O>, 'collection'>,
): Unsent<Extract<InternalRequest, { op: O }>> {
  return { op, method: 'GET', collection: 'sites', site: null, query: '', principal: SYSTEM, link: NO_LINK, ...own } as Unsent<
    Extract<InternalRequest, { op: O }>
  >;
}
