/**
 * The operator commands of `node dist/main.js` besides `serve`, as declared
 * in commands.ts (their arguments, flags and --help):
 *
 *   backup <dir>                  a consistent copy of a store, served or not
 *   restore <dir> [--force]       puts a backup back (no process may have the store open)
 *   export [--with-secret-keys | --without-secrets]
 *                                 the store as NDJSON on stdout (it holds secrets: every auth_string,
 *                                 unless --without-secrets)
 *   import <dump> [--batch N]     loads a dump into an empty store; rerun to resume
 *   users add|promote <email>     creates a user or makes one a superuser (ops/users.ts)
 *
 * Each takes --data-dir (DATA_DIR works as for serve) and --help. Each returns
 * the process's exit code: 0 done, 1 refused or failed (one line on stderr
 * saying why), 2 a usage error.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { argumentError, ConfigError, loadConfig, StartupError } from '../config.js';
import { ensurePrivateDir, secureDataDir } from '../store/data-dir.js';
import { DataDirLock } from '../store/data-dir-lock.js';
import { OpsError, restoreBackup, writeBackup } from './backup.js';
import { OPS, type OpsCommand, opsFlags, opsHelp, opsUsage } from './commands.js';
import { storeUsers } from './data-dir-use.js';
import { exportStore } from './export.js';
import { type Checkpoint, type ImportProgress, importDump } from './import.js';
import { checkStore, StoreUnreadable, unreadableStore } from './store-check.js';
import { runUsers } from './users.js';

class UsageError extends Error {}

interface Args {
  positional: string[];
  dataDir: string;
  /** Every flag of the command (commands.ts) by name: a string flag's value, true for a boolean given. */
  flags: Record<string, string | boolean | undefined>;
}

function parse(command: OpsCommand, argv: string[]): Args | 'help' {
  const options = Object.fromEntries(Object.entries(opsFlags(command)).map(([name, f]) => [name, { type: f.type }]));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError(argumentError(err, command));
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  for (const [name, v] of Object.entries(values)) if (v === '') throw new UsageError(`flag --${name} needs a value`);
  if (positionals.length !== OPS[command].args.length) throw new UsageError(`usage: node dist/main.js ${opsUsage(command)}`);
  const flags = values as Args['flags'];
  return { positional: positionals, dataDir: (flags['data-dir'] as string | undefined) || process.env.DATA_DIR || './data', flags };
}

export async function runOps(command: OpsCommand, argv: string[]): Promise<number> {
  let args: Args | 'help';
  try {
    args = parse(command, argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`netsot ${command}: ${err.message}\n`);
    return 2;
  }
  if (args === 'help') {
    process.stdout.write(opsHelp(command));
    return 0;
  }
  try {
    await COMMANDS[command](args);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`netsot ${command}: ${err.message}\n`);
      return 2;
    }
    if (err instanceof OpsError || err instanceof StartupError) {
      process.stderr.write(`netsot ${command}: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`netsot ${command}: failed: ${(err as Error).stack ?? err}\n`);
    return 1;
  }
}

/** Holds the data dir's lock (store/data-dir-lock.ts) while `work` runs: no server may write it meanwhile. */
async function holdingDataDir<T>(dataDir: string, command: string, work: () => Promise<T>): Promise<T> {
  ensurePrivateDir(dataDir);
  const lock = DataDirLock.acquire(dataDir, command);
  try {
    return await work();
  } finally {
    lock.release();
  }
}

/** The store in `dataDir`, which must exist: the commands that read one never create an empty one by mistake. */
async function openExisting(dataDir: string) {
  if (!existsSync(join(dataDir, 'netsot.mdb'))) throw new OpsError(`there is no store in ${dataDir}`);
  await openable(dataDir);
  // Imported late, as serve does: lmdb's native load is checked before anything needs it.
  const { LmdbStore: Store } = await import('../store/lmdb.js');
  return new Store(dataDir);
}

/** Refuses, in one line, a store in `dataDir` that cannot be opened (store-check.ts), before this process maps it. */
async function openable(dataDir: string): Promise<void> {
  const file = join(dataDir, 'netsot.mdb');
  if (!existsSync(file)) return;
  try {
    await checkStore(file, 'open');
  } catch (err) {
    if (err instanceof StoreUnreadable) throw new OpsError(unreadableStore(dataDir, err.reason));
    throw err;
  }
}

const COMMANDS: Record<OpsCommand, (args: Args) => Promise<void>> = {
  async backup(args) {
    const store = await openExisting(args.dataDir);
    try {
      const r = await writeBackup(store, args.dataDir, args.positional[0]);
      process.stderr.write(`netsot backup: ${r.path} written (${r.bytes} bytes, ${r.ms.toFixed(0)} ms)\n`);
    } finally {
      await store.close();
    }
  },

  async restore(args) {
    const restore = () => restoreBackup(args.positional[0], args.dataDir, args.flags.force === true);
    // A data dir that does not exist yet has no server; restoreBackup creates it only once the backup checks out.
    if (existsSync(args.dataDir)) await holdingDataDir(args.dataDir, 'restore', restore);
    else await restore();
    process.stderr.write(`netsot restore: ${args.positional[0]} restored into ${args.dataDir}\n`);
  },

  async export(args) {
    const secretKeys = args.flags['with-secret-keys'] === true;
    const withoutSecrets = args.flags['without-secrets'] === true;
    if (secretKeys && withoutSecrets) throw new UsageError('--with-secret-keys and --without-secrets contradict each other');
    const store = await openExisting(args.dataDir);
    try {
      const lines = await exportStore(store, process.stdout, { secretKeys, secrets: !withoutSecrets });
      const holds = withoutSecrets
        ? 'no secrets'
        : `secrets included: every auth_string${secretKeys ? ' and secret key' : ''}; keep the dump private`;
      process.stderr.write(`netsot export: ${lines} lines, ${holds}\n`);
    } finally {
      await store.close();
    }
  },

  async import(args) {
    const dump = args.positional[0];
    const batch = args.flags.batch === undefined ? 10_000 : Number(args.flags.batch);
    if (!/^\d+$/.test(String(args.flags.batch ?? '1')) || batch < 1 || batch > 1_000_000)
      throw new UsageError(`--batch must be between 1 and 1000000, got '${args.flags.batch}'`);
    if (!existsSync(dump)) throw new OpsError(`${dump} does not exist`);
    await openable(args.dataDir);
    secureDataDir(args.dataDir, (line) => process.stderr.write(`${line}\n`));
    await holdingDataDir(args.dataDir, 'import', async () => {
      // A backup or export reading the store holds no lock, only an LMDB reader slot.
      const users = await storeUsers(args.dataDir);
      if (users.length > 0) {
        throw new OpsError(`the store in ${args.dataDir} is in use by process ${users.join(', ')}; stop the server first`);
      }
      const { LmdbStore: Store } = await import('../store/lmdb.js');
      const store = new Store(args.dataDir);
      try {
        const progress = process.stderr.isTTY ? new BarProgress() : new LineProgress();
        const r = await importDump(store, dump, {
          batch,
          progress,
          onStart: (cp: Checkpoint | undefined, header) => {
            const what = `${dump} (dump ${header.dump_id} of ${header.created_at})`;
            process.stderr.write(
              cp ? `netsot import: resuming ${what} at line ${cp.line + 1}, ${cp.done} records already in\n` : `netsot import: ${what}\n`,
            );
          },
        });
        const c = r.counts;
        process.stderr.write(
          `netsot import: done: ${c.user} users, ${c.site} sites, ${c.object} objects, ${c.change} changes ` +
            `(${r.resumed ? 'resumed; ' : ''}${(r.ms / 1000).toFixed(1)} s)\n`,
        );
      } finally {
        await store.close();
      }
    });
  },

  async users(args) {
    const [action, email] = args.positional;
    if (action !== 'add' && action !== 'promote') throw new UsageError(`users: the action is add or promote, got '${action}'`);
    if (action === 'promote' && args.flags.superuser) throw new UsageError('users promote takes no --superuser: it makes one');
    // --store, else NETSOT_STORE or STORE, read as serve reads them.
    const store = loadConfig(process.env, args.flags.store === undefined ? {} : { STORE: String(args.flags.store) }).store;
    const r = await runUsers({ action, email, superuser: args.flags.superuser === true, dataDir: args.dataDir, store });
    const u = r.user;
    const out: Record<string, unknown> = { id: u.id, email: u.email, is_superuser: u.superuser };
    if (r.created) out.secret_key = u.secretKey;
    process.stdout.write(`${JSON.stringify(out)}\n`);
    const what = r.created ? 'created' : r.promoted ? 'promoted to superuser' : 'already a superuser';
    process.stderr.write(`netsot users: ${u.email} ${what}${r.created && u.superuser ? ' (superuser)' : ''}\n`);
  },
};

/** Records per second over the last few seconds and the ETA they give. */
class Rate {
  private readonly samples: [number, number][] = [];
  add(done: number): void {
    const now = performance.now();
    this.samples.push([now, done]);
    while (this.samples.length > 2 && now - this.samples[0][0] > 5000) this.samples.shift();
  }
  perSecond(): number {
    if (this.samples.length < 2) return 0;
    const [t0, d0] = this.samples[0];
    const [t1, d1] = this.samples[this.samples.length - 1];
    return t1 > t0 ? ((d1 - d0) * 1000) / (t1 - t0) : 0;
  }
}

const seconds = (s: number) => (Number.isFinite(s) ? `${Math.ceil(s)}s` : '?');

/** On a terminal: cli-progress's bar with records/s and its ETA. */
class BarProgress implements ImportProgress {
  private readonly bar = new cliProgress.SingleBar(
    { format: 'import |{bar}| {percentage}% | {value}/{total} records | {speed} records/s | ETA {eta_formatted}', etaBuffer: 50 },
    cliProgress.Presets.shades_classic,
  );
  private readonly rate = new Rate();
  start(total: number, done: number): void {
    this.rate.add(done);
    this.bar.start(total, done, { speed: 0 });
  }
  update(done: number): void {
    this.rate.add(done);
    this.bar.update(done, { speed: Math.round(this.rate.perSecond()) });
  }
  stop(): void {
    this.bar.stop();
  }
}

/** Elsewhere (a log, a pipe): a plain line after the first write set, then at most one every 2 s, and at the end. */
class LineProgress implements ImportProgress {
  private readonly rate = new Rate();
  private total = 0;
  private last = 0;
  private lastDone = 0;
  private printed = -1;
  private first = true;
  start(total: number, done: number): void {
    this.total = total;
    this.rate.add(done);
  }
  update(done: number): void {
    this.rate.add(done);
    this.lastDone = done;
    const now = performance.now();
    if (!this.first && now - this.last < 2000) return;
    this.first = false;
    this.last = now;
    this.print(done);
  }
  stop(): void {
    if (this.printed !== this.lastDone) this.print(this.lastDone);
  }
  private print(done: number): void {
    this.printed = done;
    const speed = this.rate.perSecond();
    const pct = this.total > 0 ? ((done * 100) / this.total).toFixed(1) : '100.0';
    const eta = speed > 0 ? seconds((this.total - done) / speed) : '?';
    process.stderr.write(`netsot import: ${done}/${this.total} records (${pct}%), ${Math.round(speed)} records/s, ETA ${eta}\n`);
  }
}
