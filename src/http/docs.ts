/**
 * /docs/: the interactive API reference. Swagger UI (swagger-ui-dist, served
 * by static.ts, nothing from elsewhere) renders /docs/openapi.json; its
 * "Try it out" calls this server with either credential scheme of the
 * document. The collections are listed too, for readers without scripts.
 */

import { ROUTES } from '../routes/table.js';
import { ASSETS_PATH } from './static.js';

export function docsPage(): string {
  const rows = ROUTES.all()
    .map(
      (c) =>
        `<li><code>/api/${c.collection}/</code>${c.api.nested ? ` and <code>/api/sites/{site_id}/${c.collection}/</code>` : ''}: ${c.schema.description}</li>`,
    )
    .join('');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>netsot API reference</title>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<link rel="stylesheet" href="${ASSETS_PATH}swagger-ui.css"></head><body>` +
    `<div id="swagger-ui" data-url="/docs/openapi.json"></div>` +
    `<noscript><h1>netsot API reference</h1><p>Machine-readable: <a href="/docs/openapi.json">openapi.json</a>. ` +
    `Browsable: <a href="/api/">/api/</a>.</p><ul>${rows}</ul></noscript>` +
    `<script src="${ASSETS_PATH}swagger-ui-bundle.js"></script><script src="${ASSETS_PATH}docs.js"></script></body></html>`
  );
}
