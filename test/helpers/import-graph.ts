/**
 * src/'s import graph as dpdm reads it (resolved as tsconfig.json says: `./x.js` is `x.ts`), for the tests that
 * keep the structure one-way: test/unit/import-cycles.test.ts and test/unit/thread-layout.test.ts.
 */
import path from 'node:path';
import { expect } from 'vitest';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** dpdm's tree from `entries`, type imports dropped (`runtime`) or kept; every relative import must resolve. */
export async function dependencyTree(cwd: string, entries: string | string[], runtime: boolean) {
  // dpdm is a dev dependency: without it these checks cannot run, and must not pass.
  const { parseDependencyTree } = await import('dpdm');
  const tree = await parseDependencyTree(entries, { cwd, context: cwd, transform: runtime, tsconfig: path.join(cwd, 'tsconfig.json') });
  // A relative import that does not resolve would hide its edge, so it fails the check.
  const unresolved = Object.values(tree)
    .flatMap((deps) => deps ?? [])
    .filter((d) => d.request.startsWith('.') && d.id === null);
  expect(unresolved.map((d) => `${d.issuer}: ${d.request}`)).toEqual([]);
  return tree;
}

/** The import graph of the files reached from `entries` (`runtime`: type imports dropped): file → the files it imports. */
export async function importGraph(cwd: string, entries: string[], runtime = false): Promise<Record<string, string[]>> {
  const tree = await dependencyTree(cwd, entries, runtime);
  const graph: Record<string, string[]> = {};
  for (const [file, deps] of Object.entries(tree)) graph[file] = (deps ?? []).flatMap((d) => (d.id !== null && d.id in tree ? [d.id] : []));
  return graph;
}
