/**
 * The browsable view of the API (README, "Docs and the browsable API"): what
 * `Accept: text/html` (or `?format=api`) gets for any GET under /api/. The
 * page keeps the status of the JSON answer and carries that JSON;
 * static/browse.js renders it (links for URLs, ids and natural keys, paging,
 * the endpoint's query parameters, forms for its writes) and from then on
 * talks JSON to the API itself, sending the signed-in token as
 * `Authorization`. Nothing is kept in a cookie, so a page of another site
 * cannot act with it; and so a page opened without credentials is not run:
 * it comes deferred, and the view asks again with the tab's token.
 */
import { readPage } from '../query/pagination.js';
import { QueryParams } from '../query/params.js';
import { ASSETS_PATH } from './static.js';

/**
 * The headers of every HTML page (this view and /docs/): the page runs only the server's own scripts and talks
 * only to this server, and no other site may frame it (so a click on it cannot be hijacked). Swagger UI on
 * /docs/ sets inline styles, which its policy allows; this view needs none.
 */
const policy = (style: string) =>
  `default-src 'none'; script-src 'self'; style-src ${style}; img-src 'self' data:; font-src 'self' data:; ` +
  "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
export const BROWSE_HEADERS = {
  'Content-Security-Policy': policy("'self'"),
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
};
export const DOCS_HEADERS = { ...BROWSE_HEADERS, 'Content-Security-Policy': policy("'self' 'unsafe-inline'") };

/** Items the view shows of a list whose URL names no page: a person reads a page, and its pager walks on. */
export const BROWSE_PAGE_ITEMS = 50;

/**
 * The query a list is read with for the view: as given when it names a page (`limit`), else with the first page
 * of BROWSE_PAGE_ITEMS. The view's page is built whole on the main thread, so it must stay small whatever the list.
 */
export function browseQuery(query: string): string {
  let named = false;
  try {
    named = readPage(new QueryParams(query)) !== null;
  } catch {
    // A malformed query is the list's own 400 to give.
    return query;
  }
  if (named) return query;
  return query === '' ? `limit=${BROWSE_PAGE_ITEMS}` : `${query}&limit=${BROWSE_PAGE_ITEMS}`;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** JSON inside <script> must not be able to close it: every `<` is written as its escape. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

/**
 * The view's page around an answer. `deferred`: the request was not run, since the page came without
 * credentials; `status` and `body` are the 401 it would get, and the view asks again with the tab's token.
 */
export function browsePage(method: string, path: string, status: number, body: string, specUrl: string, deferred = false): string {
  let pretty = body;
  try {
    pretty = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    /* not JSON: shown as is */
  }
  const title = `${status} ${method} ${path}`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>netsot ${escapeHtml(path)}</title>` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<link rel="icon" href="${ASSETS_PATH}favicon.svg"><link rel="stylesheet" href="${ASSETS_PATH}browse.css"></head>` +
    `<body><header><a href="/api/"><b>netsot</b> API</a> <a href="/docs/">reference</a><span id="auth"></span></header>` +
    `<main id="main"><h1><code>${escapeHtml(title)}</code></h1><pre>${escapeHtml(pretty)}</pre></main>` +
    `<script type="application/json" id="initial">${scriptJson({ status, path, body, spec: specUrl, deferred })}</script>` +
    `<script src="${ASSETS_PATH}browse.js"></script></body></html>`
  );
}
