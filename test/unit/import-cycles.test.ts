/**
 * No runtime import cycles in src/ (README "Layout: the request path"): a module of a
 * cycle can run while another is still loading and see its exports as
 * undefined. Every file of src/ is an entry, so a module no entry point
 * reaches yet is covered too. Type-only imports vanish from the emitted
 * JavaScript and are allowed: dpdm's `transform` drops them, as tsc does.
 *
 * Types are kept one-way too, loosely: the types every layer shares live in
 * leaf modules (src/types/), and no cycle of imports, type imports counted,
 * spans more than MAX_TYPE_CYCLE files, so a reader can follow one.
 *
 * The same checks from the command line (the second lists the type cycles):
 *   npx dpdm --no-warning --no-tree -T --exit-code circular:1 'src/**\/*.ts'
 *   npx dpdm --no-warning --no-tree src/main.ts src/shard/worker.ts src/webhook/worker.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { dependencyTree, importGraph, ROOT } from '../helpers/import-graph.js';

/** The runtime import cycles among the files `pattern` matches under `cwd`, each as its files in import order. */
async function runtimeCycles(cwd: string, pattern: string): Promise<string[][]> {
  const { parseCircular } = await import('dpdm');
  return parseCircular(await dependencyTree(cwd, pattern, true));
}

/**
 * The files of each import cycle, as strongly connected components of `graph`
 * (Tarjan's algorithm): dpdm lists every cycle path, which grows
 * combinatorially; a component is the set of files caught in cycles together.
 */
function cycleComponents(graph: Record<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph[v] ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) out.push(component.sort());
  };
  for (const v of Object.keys(graph)) if (!index.has(v)) visit(v);
  return out.sort((a, b) => b.length - a.length);
}

/** The most files one import cycle may span, type imports counted (issue 29). */
const MAX_TYPE_CYCLE = 10;

describe('import cycles', () => {
  const fixture = mkdtempSync(path.join(tmpdir(), 'netsot-cycles-'));
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  beforeAll(() => {
    writeFileSync(
      path.join(fixture, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    );
    writeFileSync(path.join(fixture, 'a.ts'), "import { b } from './b.js';\nexport const a = () => b;\n");
    writeFileSync(path.join(fixture, 'b.ts'), "import { a } from './a.js';\nexport const b = () => a;\n");
    writeFileSync(path.join(fixture, 'c.ts'), "import type { D } from './d.js';\nexport interface C { d?: D }\nexport const c = 1;\n");
    writeFileSync(path.join(fixture, 'd.ts'), "import { type C } from './c.js';\nexport interface D { c?: C }\nexport const d = 2;\n");
  });

  test('the cycle check reports a runtime cycle and ignores a type-only one', async () => {
    const cycles = await runtimeCycles(fixture, '*.ts');
    expect(cycles.map((c) => [...c].sort())).toEqual([['a.ts', 'b.ts']]);
  });

  test('the component check counts the files of type-only cycles', async () => {
    const graph = await importGraph(fixture, ['a.ts', 'c.ts']);
    expect(cycleComponents(graph)).toEqual([
      ['a.ts', 'b.ts'],
      ['c.ts', 'd.ts'],
    ]);
    expect(cycleComponents({ x: ['y'], y: ['z'], z: ['x', 'w'], w: [] })).toEqual([['x', 'y', 'z']]);
  });

  test(`no import cycle from the entry points spans more than ${MAX_TYPE_CYCLE} files, type imports counted`, async () => {
    const components = cycleComponents(await importGraph(ROOT, ['src/main.ts', 'src/shard/worker.ts', 'src/webhook/worker.ts']));
    expect(components.filter((c) => c.length > MAX_TYPE_CYCLE)).toEqual([]);
  });

  test('src has no runtime import cycle', async () => {
    const cycles = await runtimeCycles(ROOT, 'src/**/*.ts');
    expect(cycles.map((c) => [...c, c[0]].join(' -> '))).toEqual([]);
  });
});
