#!/usr/bin/env node
/**
 * CLI: `node dist/main.js serve [--host H] [--port P] [--data-dir D] [--shards N] …`, and the operator
 * commands backup, restore, export and import (src/ops/cli.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, ConfigError, flagsToSource, loadConfig } from './config.js';
import { Logger } from './log.js';
import { NativeLoadError, verifyNativeModules } from './native.js';
import { OPS_COMMANDS, OPS_USAGE, type OpsCommand } from './ops/commands.js';

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
  if (command !== 'serve') {
    const usage = ['serve [--host H] [--port P] [--data-dir D] [--shards N] [--<setting> V]', ...OPS_COMMANDS.map((c) => OPS_USAGE[c])];
    process.stderr.write(`usage:\n${usage.map((u) => `  node dist/main.js ${u}\n`).join('')}`);
    process.exit(command === undefined || command === '--help' ? 0 : 2);
  }
  let config: Config;
  try {
    config = loadConfig(process.env, flagsToSource(rest));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`netsot: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = new Logger(config.logLevel, { format: config.logFormat, bindings: { thread: 'main' } });
  try {
    const started = performance.now();
    await verifyNativeModules(log);
    if (config.store === null && !(await storeOpens(config.dataDir))) process.exit(1);
    // Imported only now: the server pulls in lmdb, whose load failure verifyNativeModules reports.
    const { startServer } = await import('./http/server.js');
    const server = await startServer(config, log);
    // Handlers first: a client that saw the listening line may stop the server at once.
    // The first SIGTERM (or SIGINT) drains: no new connections, requests in flight answered, then exit 0.
    // A second signal, or SHUTDOWN_TIMEOUT passing with requests still unanswered, exits 1 at once.
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        log.error(`netsot: ${signal} again; exiting without waiting`, { event: 'shutdown-forced', signal });
        log.flush();
        process.exit(1);
      }
      stopping = true;
      log.warn(`netsot: ${signal}; answering requests in flight, then stopping`, { event: 'shutdown', signal });
      log.flush();
      server.close().then(
        (answered) => {
          if (answered) log.warn('netsot: stopped', { event: 'stopped', code: 0 });
          else log.error(`netsot: requests still in flight after ${config.shutdownMs} ms; exiting anyway`, { event: 'stopped', code: 1 });
          log.flush();
          process.exit(answered ? 0 : 1);
        },
        () => process.exit(1),
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

process.on('uncaughtException', (err) => {
  process.stderr.write(`netsot: uncaught exception (still serving): ${err.stack}\n`);
});
process.on('unhandledRejection', (err) => {
  process.stderr.write(`netsot: unhandled rejection (still serving): ${(err as Error)?.stack ?? err}\n`);
});

main(process.argv.slice(2));
