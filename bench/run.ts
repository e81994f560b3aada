/**
 * `npm run bench -- <scenario> [args]`: runs dist-bench/bench/<scenario>.js,
 * whose `run(args)` does the work. Every bench/*.ts not starting with `_` (and
 * not this file) is a scenario.
 */
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Scenario } from './_harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const scenarios = readdirSync(here)
  .filter((f) => f.endsWith('.js') && !f.startsWith('_') && f !== 'run.js')
  .map((f) => f.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);
if (!name || !scenarios.includes(name)) {
  process.stderr.write(
    `${name ? `bench: unknown scenario '${name}'\n` : ''}usage: npm run bench -- <scenario> [args]\nscenarios: ${scenarios.join(', ')}\n`,
  );
  process.exit(name ? 2 : 0);
}

const mod = (await import(`./${name}.js`)) as { run: Scenario };
try {
  const code = await mod.run(args);
  process.exit(code ?? 0);
} catch (err) {
  process.stderr.write(`bench ${name}: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
}
