/**
 * How the tests run netsot's own processes (`serve`, the operator commands): from the TypeScript source
 * by default (`node --import tsx src/main.ts`), so an edit is tested at once with no build; from the
 * compiled dist/main.js with NETSOT_TEST_FROM=dist, which `npm test` (and so CI) sets after its build:
 * what ships is what the real-process tests run there. In-process tests (inject) run the source either way;
 * their shard workers run dist/ too under NETSOT_TEST_FROM=dist (src/own-modules.ts), where tsx compiling
 * every module again in every worker made the suite take 1,243 s instead of 864 s.
 */
import { nodeArgs } from '../../src/own-modules.js';

export const FROM_DIST = process.env.NETSOT_TEST_FROM === 'dist';

/** Node's arguments before a command's own (`serve`, `backup`, …). */
export const MAIN: readonly string[] = nodeArgs(new URL(FROM_DIST ? '../../dist/main.js' : '../../src/main.ts', import.meta.url));
