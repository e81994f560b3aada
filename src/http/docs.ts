/**
 * /docs/: the interactive API reference. Swagger UI (swagger-ui-dist, served
 * by static.ts, nothing from elsewhere) renders /docs/openapi.json; its
 * "Try it out" calls this server with either credential scheme of the
 * document. The collections are listed too, for readers without scripts.
 */

import { createHash } from 'node:crypto';
import { ROUTES } from '../routes/table.js';
import { ASSETS_PATH } from './static.js';

export const OPENAPI_PATH = '/docs/openapi.json';

const digest = (text: string, chars: number) => createHash('sha256').update(text).digest('hex').slice(0, chars);

/**
 * /docs/openapi.json as served: the document with `servers` naming the origin each request came to, its
 * ETag, and its cache policy. The document changes only with the code (and USER_AUTH_HEADER), so its
 * digest is its version: pages load it as `?v=<version>`, which a browser may keep for good, and fetch
 * it once however many pages they show; the plain URL is revalidated (If-None-Match → 304).
 */
export class ServedDocument {
  readonly version: string;
  /** The versioned URL the pages load. */
  readonly url: string;
  private readonly head: string;
  private readonly tail: string;

  constructor(doc: Record<string, unknown>) {
    const { openapi, info, ...rest } = doc;
    this.head = `{"openapi":${JSON.stringify(openapi)},"info":${JSON.stringify(info)},"servers":`;
    this.tail = `,${JSON.stringify(rest).slice(1)}`;
    this.version = digest(this.head + this.tail, 16);
    this.url = `${OPENAPI_PATH}?v=${this.version}`;
  }

  /** The document for a request to `host`: its servers name `http://<host>`, so "Try it" and clients call this server. */
  body(host: string): string {
    return this.head + JSON.stringify([{ url: `http://${host}`, description: 'This server.' }]) + this.tail;
  }

  /** Differs with the host too, since the body does. */
  etag(host: string): string {
    return `"${this.version}-${digest(host, 8)}"`;
  }

  /** Immutable under its versioned URL; anywhere else revalidated on every use. */
  cacheControl(query: string): string {
    return query === `v=${this.version}` ? 'public, max-age=31536000, immutable' : 'no-cache';
  }
}

/** Whether an If-None-Match header names `etag` (or is `*`); weak and strong tags compare alike, as RFC 9110 §13.1.2 says. */
export function matchesEtag(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === '') return false;
  return ifNoneMatch.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

export function docsPage(specUrl: string): string {
  const rows = ROUTES.all()
    .map(
      (c) =>
        `<li><code>/api/${c.collection}/</code>` +
        `${c.api.nested ? ` and <code>/api/sites/{site_id}/${c.collection}/</code>` : ''}: ${c.schema.description}</li>`,
    )
    .join('');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>netsot API reference</title>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<link rel="icon" href="${ASSETS_PATH}favicon.svg"><link rel="stylesheet" href="${ASSETS_PATH}swagger-ui.css"></head><body>` +
    `<div id="swagger-ui" data-url="${specUrl}"></div>` +
    `<noscript><h1>netsot API reference</h1><p>Machine-readable: <a href="${OPENAPI_PATH}">openapi.json</a>. ` +
    `Browsable: <a href="/api/">/api/</a>.</p><ul>${rows}</ul></noscript>` +
    `<script src="${ASSETS_PATH}swagger-ui-bundle.js"></script><script src="${ASSETS_PATH}docs.js"></script></body></html>`
  );
}
