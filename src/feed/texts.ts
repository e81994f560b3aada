/**
 * Feed items made into Changes ready to send (wire.ts FeedChange): the
 * site's part rendered as the site stands now, read once per distinct site,
 * and the rest from the Change (model/_change-text.ts). Shared by the live
 * feed (hub.ts) and by whatever reads Changes back from the store to send
 * them: a subscriber catching up (replay.ts), a webhook (webhook/store-feed.ts).
 */
import { changeHead, changeTail, siteText } from '../model/_change-text.js';
import type { FeedItem } from '../shard/protocol.js';
import type { Store } from '../store/store.js';
import type { SiteRecord, StoredChange } from '../types/stored.js';
import type { FeedChange } from './wire.js';

/** An item with its text: the site (as `sites` renders it now) and the part after it. */
export const feedChange = (item: FeedItem, sites: Map<number, string>, tail: string): FeedChange => ({
  id: item.id,
  site: item.site,
  event: item.event,
  resource: item.resource,
  text: changeHead(item.id, sites.get(item.site)!) + tail,
});

/** Each distinct site of `ids` as Changes show it, read once. */
export async function siteTexts(store: Store, ids: number[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const site of ids) if (!out.has(site)) out.set(site, siteText(await store.site<SiteRecord>(site)));
  return out;
}

/** Changes read from the store, rendered in their order. */
export async function renderStored(store: Store, changes: StoredChange[]): Promise<FeedChange[]> {
  const sites = await siteTexts(
    store,
    changes.map((c) => c.siteId),
  );
  return changes.map((c) => feedChange({ id: c.id, site: c.siteId, event: c.event, resource: c.resourceName }, sites, changeTail(c)));
}
