/**
 * A Change as the list renders it (no resource_diff), as JSON text: one
 * function for the changes list, the shards' live feed and the main thread's
 * feed catch-up, so the three are the same bytes.
 */
import type { SiteRecord } from '../shard/context.js';
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
  return (
    `{"id":${rec.id},"site":${JSON.stringify(site ? renderSite(site) : null)},"user":${JSON.stringify({ id: rec.userId, email: rec.email })},` +
    `"change_at":${rec.at},"event":"${rec.event}","resource_name":"${rec.resourceName}","resource_id":${rec.resourceId},"resource":${rec.resource}}`
  );
}
