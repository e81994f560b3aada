/**
 * Test harness: the real server (`netsot serve`, from source or dist/ as
 * main.ts says) as a child process on a random port with a temporary data
 * dir, and a small client.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchResponse, type Response } from './fetch-response.js';
import { MAIN } from './main.js';
import { storeEnv } from './postgres.js';

export type { Response } from './fetch-response.js';

export interface StartOptions {
  dataDir?: string;
  shards?: number;
  env?: Record<string, string>;
  /** A fixed port (a node restarted behind a proxy that names it); 0, any free port, unless given. */
  port?: number;
  /** The server's stdout and stderr go to this file (`> file 2>&1`, as a production log would), not to pipes. */
  stdoutFile?: string;
  /** Extra arguments after the usual serve flags (`--port` again wins over the first). */
  args?: string[];
}

/**
 * Resolves once the event loop has polled for I/O since the call. A test that held the event loop (a long
 * synchronous check) past the server's idle timer (uWS closes a keep-alive connection idle ~10 s: README, "Idle
 * connections") would otherwise send its next request on a connection the server has closed: fetch's own 4 s
 * keep-alive timer cannot run while the loop is held, and the server's FIN is not read until the loop polls. After
 * a poll, fetch knows the connection is gone and opens another. Two turns, because from a callback of the poll
 * phase the first setImmediate runs before the next poll.
 */
async function afterPoll(): Promise<void> {
  await new Promise((ok) => setImmediate(ok));
  await new Promise((ok) => setImmediate(ok));
}

export class TestServer {
  /** When this client last had an answer (performance.now()), to say how long a dropped connection had been idle at most. */
  private lastAnswer = 0;

  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
    readonly dataDir: string,
    private readonly ownsDir: boolean,
    readonly output: string[],
  ) {}

  static async start(opts: StartOptions = {}): Promise<TestServer> {
    const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'netsot-test-'));
    const args = [
      ...MAIN,
      'serve',
      '--port',
      String(opts.port ?? 0),
      '--data-dir',
      dataDir,
      '--shards',
      String(opts.shards ?? 2),
      ...(opts.args ?? []),
    ];
    const fd = opts.stdoutFile === undefined ? undefined : openSync(opts.stdoutFile, 'w');
    const proc = spawn(process.execPath, args, {
      env: { ...process.env, LOG_LEVEL: 'warn', ...(await storeEnv(dataDir)), ...opts.env },
      stdio: ['ignore', fd ?? 'pipe', fd ?? 'pipe'],
    });
    if (fd !== undefined) closeSync(fd);
    const output: string[] = [];
    const port = await new Promise<number>((ok, fail) => {
      const said = () => (opts.stdoutFile === undefined ? output.join('') : readFileSync(opts.stdoutFile, 'utf8'));
      const timer = setTimeout(() => fail(new Error(`server did not start:\n${said()}`)), 20_000);
      const listening = (text: string) => /listening on http:\/\/[^:]+:(\d+)/.exec(text);
      const found = (port: number) => {
        clearTimeout(timer);
        clearInterval(poll);
        ok(port);
      };
      // A file has no data events: it is read until the line is there.
      const poll = setInterval(() => {
        const m = opts.stdoutFile === undefined ? null : listening(readFileSync(opts.stdoutFile, 'utf8'));
        if (m) found(Number(m[1]));
      }, 50);
      proc.stdout?.on('data', (d: Buffer) => {
        output.push(d.toString());
        const m = listening(output.join(''));
        if (m) found(Number(m[1]));
      });
      proc.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
      proc.once('exit', (code) => {
        clearTimeout(timer);
        clearInterval(poll);
        fail(new Error(`server exited with ${code}:\n${said()}`));
      });
    });
    return new TestServer(proc, port, dataDir, opts.dataDir === undefined, output);
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async request(
    method: string,
    path: string,
    opts: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string>; as?: string | null; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.as !== null) headers['X-Service-Email'] = opts.as ?? 'admin@localhost';
    let body: string | Buffer | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] ??= 'application/json';
    }
    await afterPoll();
    const sent = performance.now();
    try {
      const res = await fetchResponse(this.base + path, { method, headers, body, signal: opts.signal });
      this.lastAnswer = performance.now();
      return res;
    } catch (e) {
      const err = e as Error;
      if (err.name === 'AbortError') throw err;
      // A request the server dropped: say whether the process was still there, how long this client had been
      // without an answer (a connection idle past the server's idle timer is closed), and what the server logged last.
      const state =
        this.proc.exitCode !== null || this.proc.signalCode !== null ? `exited (${this.proc.exitCode ?? this.proc.signalCode})` : 'running';
      const idle = this.lastAnswer === 0 ? 'before any answer' : `${Math.round(sent - this.lastAnswer)} ms after the previous answer`;
      throw new Error(
        `${method} ${path}: ${err.message} (${String(err.cause)}), sent ${idle}; the server is ${state}, its output ends:\n${this.output.join('').slice(-3000)}`,
        { cause: err },
      );
    }
  }

  get = (path: string, opts?: Parameters<TestServer['request']>[2]) => this.request('GET', path, opts);
  post = (path: string, body?: unknown, opts?: Parameters<TestServer['request']>[2]) => this.request('POST', path, { ...opts, body });
  put = (path: string, body?: unknown, opts?: Parameters<TestServer['request']>[2]) => this.request('PUT', path, { ...opts, body });
  patch = (path: string, body?: unknown, opts?: Parameters<TestServer['request']>[2]) => this.request('PATCH', path, { ...opts, body });
  delete = (path: string, opts?: Parameters<TestServer['request']>[2]) => this.request('DELETE', path, opts);

  /** Graceful stop (SIGTERM); keeps the data dir unless `cleanup`. */
  async stop(cleanup = true): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((ok) => this.proc.once('exit', ok));
      this.proc.kill('SIGTERM');
      await exited;
    }
    if (cleanup && this.ownsDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** SIGKILL: no chance to flush anything. */
  async kill(): Promise<void> {
    const exited = new Promise((ok) => this.proc.once('exit', ok));
    this.proc.kill('SIGKILL');
    await exited;
  }
}
