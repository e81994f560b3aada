#!/usr/bin/env node
/**
 * CLI: `node dist/main.js serve [--<setting> <value>]…` (every setting of src/config.ts), and the operator
 * commands backup, restore, export, import and users (src/ops/cli.ts). `<command> --help` explains each.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, ConfigError, loadConfig, parseServeArgs, StartupError, serveHelp } from './config.js';
import { Logger } from './log.js';
import { configureLogSink } from './log-sink.js';
import { NativeLoadError, verifyNativeModules } from './native.js';
import { OPS, OPS_COMMANDS, type OpsCommand, opsUsage } from './ops/commands.js';

/** How long an exit waits for the log to be written. */
const LOG_FLUSH_MS = 1000;

function usage(): string {
  const lines = [
    ['serve [--<setting> <value>]…', 'Runs the server (serve --help lists every setting).'],
    ...OPS_COMMANDS.map((c) => [opsUsage(c), OPS[c].summary]),
  ];
  return [
    'usage: node dist/main.js <command> [arguments]  (npx netsot <command> …)',
    '',
    ...lines.map(([u, what]) => `  ${u}\n      ${what}`),
    '',
    '<command> --help explains one command.',
    '',
  ].join('\n');
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (OPS_COMMANDS.includes(command as OpsCommand)) {
    try {
      await verifyNativeModules(new Logger('warn'));
    } catch (err) {
      process.stderr.write(`netsot: ${(err as Error).message}\n`);
      process.exit(3);
    }
    const { runOps } = await import('./ops/cli.js');
    process.exit(await runOps(command as OpsCommand, rest));
  }
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(usage());
    process.exit(0);
  }
  if (command !== 'serve') {
    process.stderr.write(`netsot: unknown command '${command}'\n${usage()}`);
    process.exit(2);
  }
  let config: Config;
  try {
    const args = parseServeArgs(rest);
    if (args.help) {
      process.stdout.write(serveHelp());
      process.exit(0);
    }
    config = loadConfig(process.env, args.flags);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`netsot: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // The main thread's lines go through the log writer thread (log-thread.ts): the thread answering requests only
  // copies each line's facts into shared memory (README, "Logs").
  configureLogSink(config.logBufferBytes, true);
  const log = new Logger(config.logLevel, { format: config.logFormat, bindings: { thread: 'main' } });
  // From here on, stderr carries nothing the log does not: a stderr that fails (a closed pipe) costs nothing.
  process.stderr.on('error', () => undefined);
  process.on('uncaughtException', (err) => log.error('netsot: uncaught exception (still serving)', { event: 'uncaught', err }));
  process.on('unhandledRejection', (err) =>
    log.error('netsot: unhandled rejection (still serving)', {
      event: 'uncaught',
      err: err instanceof Error ? err : new Error(String(err)),
    }),
  );
  /** Exits once the log has been written, or `LOG_FLUSH_MS` later: a log nobody reads never holds the process. */
  const exit = (code: number) => {
    log.close(LOG_FLUSH_MS).then(() => process.exit(code));
  };
  try {
    const started = performance.now();
    await verifyNativeModules(log);
    if (config.store === null && !(await storeOpens(config.dataDir))) process.exit(1);
    // Imported only now: the server pulls in lmdb, whose load failure verifyNativeModules reports.
    const { startServer } = await import('./http/server.js');
    const server = await startServer(config, log);
    // Handlers first: a client that saw the listening line may stop the server at once.
    // The first SIGTERM (or SIGINT) drains: SHUTDOWN_DELAY seconds not ready but serving, then no new connections,
    // requests in flight answered, then exit 0.
    // A second signal, or SHUTDOWN_TIMEOUT passing with requests still unanswered, exits 1 at once.
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        // Without waiting for requests, but with the log's second at most: the lines go through the log writer
        // thread, and a process.exit() here would drop this one with whatever else it holds.
        log.error(`netsot: ${signal} again; exiting without waiting`, { event: 'shutdown-forced', signal });
        exit(1);
        return;
      }
      stopping = true;
      const delay = config.shutdownDelayMs;
      const first = delay > 0 ? `serving ${delay / 1000} s more with /readyz at 503, then ` : '';
      log.warn(`netsot: ${signal}; ${first}answering requests in flight, then stopping`, { event: 'shutdown', signal });
      log.flush();
      // Whatever hangs past the drain (a store that does not close), the process still ends.
      setTimeout(() => process.exit(1), delay + config.shutdownMs + 2 * LOG_FLUSH_MS).unref();
      server.close(config.shutdownMs, delay).then(
        (answered) => {
          if (answered) log.warn('netsot: stopped', { event: 'stopped', code: 0 });
          else log.error(`netsot: requests still in flight after ${config.shutdownMs} ms; exiting anyway`, { event: 'stopped', code: 1 });
          exit(answered ? 0 : 1);
        },
        () => exit(1),
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    // At warn, like the shutdown events, so LOG_LEVEL=warn still shows when the server started and stopped.
    const readyMs = Math.round(performance.now() - started);
    log.warn(
      `netsot listening on http://${config.host}:${server.port} (data ${config.dataDir}, ${config.shards} shards, ready in ${readyMs}ms)`,
      {
        event: 'listening',
        host: config.host,
        port: server.port,
        dataDir: config.dataDir,
        shards: config.shards,
        readyMs,
        metrics: config.metrics,
      },
    );
    log.flush();
  } catch (err) {
    if (err instanceof NativeLoadError) {
      process.stderr.write(`netsot: ${err.message}\n`);
      process.exit(3);
    }
    // A refusal found only once the store is reached (another live node holds this NODE_ID): one line, like a bad setting.
    if (err instanceof ConfigError) {
      process.stderr.write(`netsot: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof StartupError) {
      process.stderr.write(`netsot: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`netsot: start-up failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  }
}

/**
 * Whether the LMDB store in `dataDir` (if there is one yet) can be opened, asked of a child process before
 * this one maps it: a damaged file would otherwise end the server with SIGBUS or SIGSEGV (ops/store-check.ts).
 * When it cannot, says why in one line.
 */
async function storeOpens(dataDir: string): Promise<boolean> {
  const { checkStore, StoreUnreadable, unreadableStore } = await import('./ops/store-check.js');
  const file = join(dataDir, 'netsot.mdb');
  if (!existsSync(file)) return true;
  try {
    await checkStore(file, 'open');
    return true;
  } catch (err) {
    if (!(err instanceof StoreUnreadable)) throw err;
    process.stderr.write(`netsot: ${unreadableStore(dataDir, err.reason)}\n`);
    return false;
  }
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`netsot: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
