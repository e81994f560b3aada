/** The operator commands (`netsot backup|restore|export|import …`) as child processes, run as main.ts says. */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { MAIN } from './main.js';

export { MAIN } from './main.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; `stdoutFile` takes its stdout instead of the result (an export's dump). */
export function runCli(args: string[], opts: { stdoutFile?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  const fd = opts.stdoutFile === undefined ? undefined : openSync(opts.stdoutFile, 'w');
  const proc = spawn(process.execPath, [...MAIN, ...args], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', fd ?? 'pipe', 'pipe'],
  });
  if (fd !== undefined) closeSync(fd);
  return finished(proc);
}

/** Collects a started command's output until it exits. */
export function finished(proc: ChildProcess, onStderr?: (text: string) => void): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  proc.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
    onStderr?.(stderr);
  });
  return new Promise((ok) => proc.once('close', (code, signal) => ok({ code, signal, stdout, stderr })));
}

export const spawnCli = (args: string[]): ChildProcess =>
  spawn(process.execPath, [...MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
