/**
 * Starting one of netsot's own modules in a worker thread (the shard workers, the webhook worker, the PostgreSQL reader) or a
 * child process (the store check), in the form the caller runs in: compiled JavaScript from dist/ in
 * production, or the TypeScript source when the tests run it (vitest in process, or a server spawned as
 * `node --import tsx src/main.ts`), so an edit is tested without a build.
 *
 * A module from source needs a TypeScript loader (tsx, a devDependency; never asked for in production,
 * where every module is `.js`). A child process is given it with `--import`; a worker thread registers it
 * first thing, since Node 20 passes neither a parent's loader hooks nor an `--import` to its workers.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

const fromSource = (module: URL) => module.pathname.endsWith('.ts');

/**
 * The module `name` (a path without extension) relative to `caller` (its import.meta.url), compiled or source as the
 * caller is; except that NETSOT_TEST_FROM=dist (set by `npm test` once it has built dist/) has source callers start the
 * compiled module: tsx would compile every module again in every worker, which made the whole suite take 1,243 s instead of 864 s.
 */
export function ownModule(caller: string, name: string): URL {
  if (!caller.endsWith('.ts')) return new URL(`${name}.js`, caller);
  const source = new URL(`${name}.ts`, caller);
  if (process.env.NETSOT_TEST_FROM !== 'dist') return source;
  const at = source.href.lastIndexOf('/src/');
  return new URL(`${source.href.slice(0, at)}/dist/${source.href.slice(at + 5, -3)}.js`);
}

/** Resolved from here rather than from the working directory, which may be anywhere. */
const resolveHere = (specifier: string) => createRequire(import.meta.url).resolve(specifier);

/** tsx's ESM API (its `register`), found through the package's exports as an `import` would find it. */
function tsxApi(): string {
  const pkg = resolveHere('tsx/package.json');
  const exported: string = JSON.parse(readFileSync(pkg, 'utf8')).exports['./esm/api'].import.default;
  return pathToFileURL(join(dirname(pkg), exported)).href;
}

/** A worker thread running `module`; one from source registers the TypeScript loader before it imports the module. */
export function startWorker(module: URL, options: WorkerOptions): Worker {
  if (!fromSource(module)) return new Worker(module, options);
  const boot = `import(${JSON.stringify(tsxApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

/** Node's arguments that run `module` as a process of its own (arguments of the module itself follow). */
export function nodeArgs(module: URL): string[] {
  const file = fileURLToPath(module);
  return fromSource(module) ? ['--import', pathToFileURL(resolveHere('tsx')).href, file] : [file];
}
