/**
 * The operator commands of `node dist/main.js` besides `serve`:
 *
 *   backup <dir> [--data-dir D]                 a consistent copy of a store, served or not
 *   restore <dir> [--data-dir D] [--force]      puts a backup back (no process may have the store open)
 *   export [--data-dir D] [--with-secret-keys | --without-secrets]
 *                                               the store as NDJSON on stdout (it holds secrets: every
 *                                               auth_string, unless --without-secrets)
 *   import <dump> [--data-dir D] [--batch N]    loads a dump into an empty store; rerun to resume
 *
 * DATA_DIR works as for serve. Each returns the process's exit code: 0 done,
 * 1 refused or failed (one line on stderr saying why), 2 a usage error.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import { OpsError, restoreBackup, writeBackup } from './backup.js';
import { OPS_USAGE, type OpsCommand } from './commands.js';
import { storeUsers } from './data-dir-use.js';
import { exportStore } from './export.js';
import { type Checkpoint, type ImportProgress, importDump } from './import.js';
import { checkStore, StoreUnreadable, unreadableStore } from './store-check.js';

class UsageError extends Error {}

interface Args {
  positional: string[];
  dataDir: string;
  force: boolean;
  secretKeys: boolean;
  withoutSecrets: boolean;
  batch: number;
}

function parseArgs(command: OpsCommand, argv: string[]): Args {
  const args: Args = {
    positional: [],
    dataDir: process.env.DATA_DIR || './data',
    force: false,
    secretKeys: false,
    withoutSecrets: false,
    batch: 10_000,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] =
      arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new UsageError(`flag ${flag} needs a value`);
      return v;
    };
    if (flag === '--data-dir') args.dataDir = value();
    else if (flag === '--force' && command === 'restore') args.force = true;
    else if (flag === '--with-secret-keys' && command === 'export') args.secretKeys = true;
    else if (flag === '--without-secrets' && command === 'export') args.withoutSecrets = true;
    else if (flag === '--batch' && command === 'import') {
      const v = value();
      if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 1_000_000)
        throw new UsageError(`--batch must be between 1 and 1000000, got '${v}'`);
      args.batch = Number(v);
    } else if (flag.startsWith('-')) throw new UsageError(`unknown flag ${flag}`);
    else args.positional.push(arg);
  }
  if (args.secretKeys && args.withoutSecrets) throw new UsageError('--with-secret-keys and --without-secrets contradict each other');
  const wanted = command === 'export' ? 0 : 1;
  if (args.positional.length !== wanted) throw new UsageError(`usage: node dist/main.js ${OPS_USAGE[command]}`);
  return args;
}

export async function runOps(command: OpsCommand, argv: string[]): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(command, argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`netsot: ${err.message}\n`);
    return 2;
  }
  try {
    await COMMANDS[command](args);
    return 0;
  } catch (err) {
    if (err instanceof OpsError) {
      process.stderr.write(`netsot ${command}: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`netsot ${command}: failed: ${(err as Error).stack ?? err}\n`);
    return 1;
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
    await restoreBackup(args.positional[0], args.dataDir, args.force);
    process.stderr.write(`netsot restore: ${args.positional[0]} restored into ${args.dataDir}\n`);
  },

  async export(args) {
    const store = await openExisting(args.dataDir);
    try {
      const lines = await exportStore(store, process.stdout, { secretKeys: args.secretKeys, secrets: !args.withoutSecrets });
      const holds = args.withoutSecrets
        ? 'no secrets'
        : `secrets included: every auth_string${args.secretKeys ? ' and secret key' : ''}; keep the dump private`;
      process.stderr.write(`netsot export: ${lines} lines, ${holds}\n`);
    } finally {
      await store.close();
    }
  },

  async import(args) {
    const dump = args.positional[0];
    if (!existsSync(dump)) throw new OpsError(`${dump} does not exist`);
    await openable(args.dataDir);
    const users = await storeUsers(args.dataDir);
    if (users.length > 0) {
      throw new OpsError(`the store in ${args.dataDir} is in use by process ${users.join(', ')}; stop the server first`);
    }
    const { LmdbStore: Store } = await import('../store/lmdb.js');
    const { secureDataDir } = await import('../store/data-dir.js');
    secureDataDir(args.dataDir, (line) => process.stderr.write(`${line}\n`));
    const store = new Store(args.dataDir);
    try {
      const progress = process.stderr.isTTY ? new BarProgress() : new LineProgress();
      const r = await importDump(store, dump, {
        batch: args.batch,
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
