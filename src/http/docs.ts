/**
 * /docs/: a page listing every collection and linking the OpenAPI document
 * (http/openapi.ts), both read off the route table.
 */

import { ROUTES } from '../routes/table.js';

export function docsPage(): string {
  const rows = ROUTES.all()
    .map(
      (c) =>
        `<li><code>/api/${c.collection}/</code>${c.api.nested ? ` and <code>/api/sites/{site_id}/${c.collection}/</code>` : ''}: ${c.schema.description}</li>`,
    )
    .join('');
  return (
    `<!doctype html><html><head><meta charset="utf-8"><title>netsot API reference</title></head><body>` +
    `<h1>netsot API reference</h1><p>Machine-readable: <a href="/docs/openapi.json">openapi.json</a>.</p><ul>${rows}</ul></body></html>`
  );
}
