/**
 * /docs/assets/<name>: the files the docs and the browsable view load, served
 * by the app itself so both work offline: Swagger UI's bundle and stylesheet
 * from the swagger-ui-dist package, and this project's static/ directory
 * (the browsable view's script and stylesheet, the docs page's start-up,
 * the pages' icon, which a browser would otherwise ask of /favicon.ico).
 *
 * The names are listed once at start: a request names one of them or gets
 * 404, so no path in a request ever reaches the file system (no traversal).
 * Each file is read on first use and kept (they are few and small).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ASSETS_PATH = '/docs/assets/';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Of swagger-ui-dist, only what /docs/ loads. */
const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'];

export interface Asset {
  type: string;
  body: string;
}

export class StaticAssets {
  private readonly files = new Map<string, string>();
  private readonly loaded = new Map<string, Asset>();

  constructor() {
    const swagger = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist'));
    for (const name of SWAGGER_FILES) this.files.set(name, join(swagger, name));
    // static/ is in the project root: two levels above dist/http/ and src/http/, three above dist-bench/src/http/.
    const own = [new URL('../../static/', import.meta.url), new URL('../../../static/', import.meta.url)]
      .map((u) => fileURLToPath(u))
      .find((dir) => existsSync(join(dir, 'browse.js')));
    if (own === undefined) throw new Error('static/ not found above the server module');
    for (const name of readdirSync(own)) if (TYPES[extname(name)]) this.files.set(name, join(own, name));
  }

  /** The asset at `/docs/assets/<name>`, or null when there is none by that name. */
  get(name: string): Asset | null {
    let asset = this.loaded.get(name);
    if (asset) return asset;
    const file = this.files.get(name);
    if (file === undefined) return null;
    asset = { type: TYPES[extname(name)]!, body: readFileSync(file, 'utf8') };
    this.loaded.set(name, asset);
    return asset;
  }
}
