/**
 * What the site model and the main thread's site directory share: the site
 * schema, its rendering, the create check and the duplicate-name error.
 * Depends on no resource module, so site.ts can declare the directory's hook.
 */
import { demandSuperuser } from '../auth/permissions.js';
import { Errors } from '../errors.js';
import { defineSchema, Field } from '../schema/fields.js';
import { requireObject, validateFields } from '../schema/validate.js';
import type { Principal } from '../types/auth.js';
import type { SiteRecord } from '../types/stored.js';

export const siteSchema = defineSchema('Site', 'API endpoint that allows Sites to be viewed or edited.', {
  id: Field.id(),
  name: Field.string({ maxLength: 255, requiredOn: ['POST', 'PUT'], help: 'The name of the Site.' }),
  // No length limit: docs/api.md §19 gives none (the reference field is a TextField), unlike the ≤255 descriptions elsewhere.
  description: Field.string({ allowBlank: true, help: 'A helpful description for the Site.' }),
});

export const renderSite = (s: SiteRecord) => ({ id: s.id, name: s.name, description: s.description });

export const duplicateName = () => Errors.field('name', 'site with this name already exists.');

/** Who may create a site and with what: checked before the main thread spends an id on it. */
export function siteCreateCheck(principal: Principal, body: unknown): Record<string, unknown> {
  demandSuperuser(principal);
  return validateFields(siteSchema, requireObject(body), 'POST');
}
