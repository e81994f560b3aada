/**
 * A Change as the list renders it (no resource_diff), as JSON text: one
 * function for the changes list, the live feed and the feed's catch-up, so
 * the three are the same bytes.
 *
 * The text is written as a head (id and site) and a tail (everything after
 * the site) because the feed takes the tail from the shard that committed
 * the Change, while the site is rendered as it stands when the Change is
 * delivered, as the list renders it when read (feed/hub.ts).
 */

import type { SiteRecord } from '../types/stored.js';
import { renderSite } from './_site.js';

export interface ChangeTextFields {
  id: number;
  at: number;
  event: string;
  resourceName: string;
  resourceId: number;
  userId: number;
  email: string;
  /** The resource's API shape as JSON text. */
  resource: string;
}

export function changeText(rec: ChangeTextFields, site: SiteRecord | undefined): string {
  return changeHead(rec.id, siteText(site)) + changeTail(rec);
}

/** The site as a Change shows it: null once the site is gone. */
export const siteText = (site: SiteRecord | undefined): string => JSON.stringify(site ? renderSite(site) : null);

/** The text up to the site: `site` is its siteText. */
export const changeHead = (id: number, site: string): string => `{"id":${id},"site":${site}`;

/** The text after the site, up to and including the closing brace. */
export function changeTail(rec: ChangeTextFields): string {
  return (
    `,"user":{"id":${rec.userId},"email":${JSON.stringify(rec.email)}},` +
    `"change_at":${rec.at},"event":"${rec.event}","resource_name":"${rec.resourceName}",` +
    `"resource_id":${rec.resourceId},"resource":${rec.resource}}`
  );
}
