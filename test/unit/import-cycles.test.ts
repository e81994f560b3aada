/**
 * No runtime import cycles in src/ (README "Layout: the request path"): a module of a
 * cycle can run while another is still loading and see its exports as
 * undefined. Every file of src/ is an entry, so a module no entry point
 * reaches yet is covered too. Type-only imports vanish from the emitted
 * JavaScript and are allowed: dpdm's `transform` drops them, as tsc does.
 *
 * The same check from the command line:
 *   npx dpdm --no-warning --no-tree -T --exit-code circular:1 'src/**\/*.ts'
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The runtime import cycles among the files `pattern` matches under `cwd`
 * (resolved as its tsconfig.json says: `./x.js` is `x.ts`), each as its files
 * in import order. A relative import that does not resolve would hide its
 * edge, so it fails the check.
 */
async function runtimeCycles(cwd: string, pattern: string): Promise<string[][]> {
  // dpdm is a dev dependency: without it this check cannot run, and must not pass.
  const { parseCircular, parseDependencyTree } = await import('dpdm');
  const tree = await parseDependencyTree(pattern, { cwd, context: cwd, transform: true, tsconfig: path.join(cwd, 'tsconfig.json') });
  const unresolved = Object.values(tree)
    .flatMap((deps) => deps ?? [])
    .filter((d) => d.request.startsWith('.') && d.id === null);
  expect(unresolved.map((d) => `${d.issuer}: ${d.request}`)).toEqual([]);
  return parseCircular(tree);
}

describe('import cycles', () => {
  const fixture = mkdtempSync(path.join(tmpdir(), 'netsot-cycles-'));
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  test('the cycle check reports a runtime cycle and ignores a type-only one', async () => {
    writeFileSync(
      path.join(fixture, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    );
    writeFileSync(path.join(fixture, 'a.ts'), "import { b } from './b.js';\nexport const a = () => b;\n");
    writeFileSync(path.join(fixture, 'b.ts'), "import { a } from './a.js';\nexport const b = () => a;\n");
    writeFileSync(path.join(fixture, 'c.ts'), "import type { D } from './d.js';\nexport interface C { d?: D }\nexport const c = 1;\n");
    writeFileSync(path.join(fixture, 'd.ts'), "import { type C } from './c.js';\nexport interface D { c?: C }\nexport const d = 2;\n");
    const cycles = await runtimeCycles(fixture, '*.ts');
    expect(cycles.map((c) => [...c].sort())).toEqual([['a.ts', 'b.ts']]);
  });

  test('src has no runtime import cycle', async () => {
    const cycles = await runtimeCycles(ROOT, 'src/**/*.ts');
    expect(cycles.map((c) => [...c, c[0]].join(' -> '))).toEqual([]);
  });
});
