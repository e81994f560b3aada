/**
 * Shared bench plumbing: the real server (`node dist-bench/src/main.js serve`) and a raw
 * uWS baseline as child processes, autocannon run in this process, and
 * reporting. The client and the servers share the machine's cores, so the
 * servers always run as separate processes and the client stays here.
 *
 * Every child and temp dir is registered and removed on exit, Ctrl-C or error.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { fetchResponse } from '../test/helpers/fetch-response.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist-bench/bench
export const ROOT = resolve(HERE, '../..');
/**
 * The server as compiled by bench/tsconfig.json alongside the scenarios, not
 * dist/: a concurrent `npm run build` (e.g. `npm test`) rewriting dist/ must
 * not break a server the bench is starting, and in-process scenarios and the
 * server then run the very same build.
 */
export const MAIN = join(ROOT, 'dist-bench/src/main.js');
const RAW_UWS = join(HERE, '_raw-uws.js');

/** A scenario file exports `run(args)`; a non-zero result becomes the exit code. */
export type Scenario = (args: string[]) => Promise<number | undefined>;

// ---------------------------------------------------------------- settings

export function envNumber(name: string, fallback: number, min = 0): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got '${v}'`);
  return n;
}

// ---------------------------------------------------------------- cleanup

const cleanups = new Set<() => void>();
let exiting = false;

function cleanupAll(): void {
  for (const fn of [...cleanups].reverse()) {
    try {
      fn();
    } catch {
      /* best effort */
    }
  }
  cleanups.clear();
}

process.once('exit', cleanupAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    if (exiting) return;
    exiting = true;
    process.stderr.write(`\nbench: ${sig}, stopping servers\n`);
    cleanupAll();
    process.exit(130);
  });
}

/** A fresh temp dir, removed on exit (also on Ctrl-C or error) or when `remove()` is called. */
export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => {
    rmSync(path, { recursive: true, force: true });
    cleanups.delete(remove);
  };
  cleanups.add(remove);
  return { path, remove };
}

/**
 * Where a bench keeps a store it fills once: with BENCH_KEEP_DATA set, that path (when it holds a '/') or
 * $TMPDIR/<keptName>, kept and reused by later runs; otherwise a fresh temp dir, removed at the end.
 */
export function keptOrTempDir(keptName: string, tempPrefix: string): { path: string; remove(): void } {
  const keep = process.env.BENCH_KEEP_DATA;
  if (!keep) return tempDir(tempPrefix);
  const path = keep.includes('/') ? keep : join(tmpdir(), keptName);
  mkdirSync(path, { recursive: true });
  return { path, remove: () => {} };
}

// ---------------------------------------------------------------- child servers

export interface ChildServer {
  name: string;
  port: number;
  pid: number;
  base: string;
  output: string[];
  /** performance.now() when the process was spawned and when it printed its listening line. */
  spawnedAt: number;
  listeningAt: number;
  /** SIGTERM, then SIGKILL after 5 s; removes its temp dir (not a data dir the caller passed in). */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash: no shutdown code runs) and waits for the exit; removes its temp dir likewise. */
  kill(): Promise<void>;
}

function waitForListening(proc: ChildProcess, name: string, pattern: RegExp, output: string[], timeoutMs: number): Promise<number> {
  return new Promise<number>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${timeoutMs} ms:\n${output.join('')}`)), timeoutMs);
    let stdout = '';
    proc.stdout!.on('data', (d: Buffer) => {
      output.push(d.toString());
      stdout += d.toString();
      const m = pattern.exec(stdout);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    });
    proc.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`${name} exited during start-up (code ${code}, signal ${signal}):\n${output.join('')}`));
    });
  });
}

/**
 * BENCH_SERVER_NODE_ARGS: Node options for the servers a bench starts (not its own process), e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where a server's time goes; Node refuses them in NODE_OPTIONS.
 */
function serverNodeArgs(): string[] {
  const extra = process.env.BENCH_SERVER_NODE_ARGS?.trim();
  return extra ? extra.split(/\s+/) : [];
}

async function spawnServer(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  pattern: RegExp,
  tempDir?: string,
  timeoutMs = 30_000,
): Promise<ChildServer> {
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const kill = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  };
  const removeDir = () => {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  };
  const cleanup = () => {
    kill();
    removeDir();
  };
  cleanups.add(cleanup);
  let port: number;
  try {
    port = await waitForListening(proc, name, pattern, output, timeoutMs);
  } catch (err) {
    cleanup();
    cleanups.delete(cleanup);
    throw err;
  }
  // Drain output so a chatty child never blocks on a full pipe; keep the tail for diagnostics.
  const listeningAt = performance.now();
  const keepTail = () => {
    if (output.length > 200) output.splice(0, output.length - 200);
  };
  proc.stdout!.on('data', keepTail);
  proc.stderr!.on('data', keepTail);
  return {
    name,
    port,
    pid: proc.pid!,
    base: `http://127.0.0.1:${port}`,
    output,
    spawnedAt,
    listeningAt,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
        proc.kill('SIGKILL');
        await exited;
      }
      removeDir();
      cleanups.delete(cleanup);
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
        proc.kill('SIGTERM');
        const timer = setTimeout(kill, 5_000);
        await exited;
        clearTimeout(timer);
      }
      removeDir();
      cleanups.delete(cleanup);
    },
  };
}

export interface NetsotOptions {
  shards?: number;
  env?: Record<string, string>;
  /** Serve this data dir (the caller's: never removed) instead of a fresh temp one. */
  dataDir?: string;
  /** How long start-up may take before it counts as failed (default 30 s). */
  startTimeoutMs?: number;
  /** Another build's main.js to run instead of this one's (a baseline build, see _get-one.ts). */
  main?: string;
}

/**
 * The real server on 127.0.0.1, a random port and a fresh temp data dir; LOG_LEVEL=warn; node flags from
 * BENCH_SERVER_NODE_ARGS (one profile per thread with --cpu-prof, written when the server stops).
 */
export function startNetsot(opts: NetsotOptions = {}): Promise<ChildServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'netsot-bench-'));
  const args = [...serverNodeArgs(), opts.main ?? MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir];
  if (opts.shards !== undefined) args.push('--shards', String(opts.shards));
  return spawnServer(
    'netsot',
    args,
    { ...process.env, LOG_LEVEL: 'warn', ...opts.env },
    /netsot listening on http:\/\/[^\s:]+:(\d+)/,
    opts.dataDir === undefined ? dataDir : undefined,
    opts.startTimeoutMs,
  );
}

/**
 * A netsot whose stdout goes to a file, as a production log would: through the harness's pipe, every
 * access line would be read by this process, on the thread that runs the client.
 */
export async function startNetsotLoggingToFile(env: Record<string, string>): Promise<ChildServer & { logFile: string }> {
  const dir = tempDir('netsot-bench-log-');
  const logFile = join(dir.path, 'stdout.log');
  const out = openSync(logFile, 'w');
  const args = [...serverNodeArgs(), MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', join(dir.path, 'data')];
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, 'inherit'] });
  const spawnedAt = performance.now();
  let port = 0;
  for (let waited = 0; port === 0; waited += 100) {
    if (waited > 30_000 || proc.exitCode !== null) throw new Error(`netsot (logging to ${logFile}) did not start`);
    await new Promise((r) => setTimeout(r, 100));
    const m = /netsot listening on http:\/\/[^\s:]+:(\d+)/.exec(readFileSync(logFile, 'utf8'));
    if (m) port = Number(m[1]);
  }
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
      proc.kill('SIGTERM');
      await exited;
    }
    dir.remove();
  };
  return {
    name: 'netsot (log to file)',
    port,
    pid: proc.pid!,
    base: `http://127.0.0.1:${port}`,
    output: [],
    spawnedAt,
    listeningAt: performance.now(),
    stop,
    kill: stop,
    logFile,
  };
}

export interface RawUwsOptions {
  status?: string;
  headers: [string, string][];
  body: string;
}

/**
 * The baseline: uWS (native binary loaded exactly as src/http/uws.ts does)
 * answering every request synchronously with a fixed status, headers and body.
 */
export function startRawUws(opts: RawUwsOptions): Promise<ChildServer> {
  const config = JSON.stringify({ status: opts.status ?? '200 OK', headers: opts.headers, body: opts.body });
  return spawnServer('raw uWS', [RAW_UWS], { ...process.env, BENCH_RAW_UWS: config }, /raw uws listening on http:\/\/[^\s:]+:(\d+)/);
}

// ---------------------------------------------------------------- HTTP helper

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** The bootstrap superuser of a fresh data dir, by service header. */
export const AUTH = { 'X-Service-Email': 'admin@localhost' };

/** Throws unless the reply has this status; `what` names the request. */
export function expectStatus(reply: Reply, status: number, what: string): void {
  if (reply.status !== status) throw new Error(`${what} answered ${reply.status}, expected ${status}: ${reply.text.slice(0, 500)}`);
}

export async function request(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] ??= 'application/json';
  }
  return fetchResponse(base + path, { method, headers, body });
}

/** POSTs a site named `name` as the superuser and, under it, a network for each of `cidrs`; resolves with the site's id. */
export async function siteWithNetworks(base: string, name: string, cidrs: string[] = []): Promise<number> {
  const site = await request(base, 'POST', '/api/sites/', { body: { name }, headers: AUTH });
  expectStatus(site, 201, `POST site ${name}`);
  const id = site.json.id as number;
  for (const cidr of cidrs)
    expectStatus(await request(base, 'POST', `/api/sites/${id}/networks/`, { body: { cidr }, headers: AUTH }), 201, `POST ${cidr}`);
  return id;
}

/** Headers uWS writes itself (or the transport owns); the baseline must not repeat them. */
const TRANSPORT_HEADERS = new Set(['date', 'uwebsockets', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/** The application headers of a reply, names in canonical case, for the baseline to copy. */
export function applicationHeaders(reply: Reply): [string, string][] {
  const out: [string, string][] = [];
  reply.headers.forEach((value, name) => {
    if (!TRANSPORT_HEADERS.has(name)) out.push([name.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase()), value]);
  });
  return out;
}

// ---------------------------------------------------------------- load

const CLK_TCK = (() => {
  try {
    return Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds (all threads) a process has used so far, from /proc; null off Linux. */
export function processCpuSeconds(pid: number, path = `/proc/${pid}/stat`): number | null {
  const split = processCpuSplit(pid, path);
  return split && split.user + split.system;
}

/** processCpuSeconds in user and system (kernel) time apart: what a process spends in syscalls shows in `system`. */
export function processCpuSplit(pid: number, path = `/proc/${pid}/stat`): { user: number; system: number } | null {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLK_TCK, system: Number(fields[12]) / CLK_TCK }; // utime, stime
  } catch {
    return null;
  }
}

/** CPU seconds each thread of a process has used so far, by thread id, from /proc; null off Linux. */
export function threadCpuSeconds(pid: number): Map<number, number> | null {
  try {
    const out = new Map<number, number>();
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const cpu = processCpuSeconds(Number(tid), `/proc/${pid}/task/${tid}/stat`);
      if (cpu !== null) out.set(Number(tid), cpu);
    }
    return out;
  } catch {
    return null;
  }
}

/**
 * The threads that used the most CPU between two threadCpuSeconds snapshots,
 * in cores over `seconds`, busiest first, as text: `thread 1 0.42, main 0.22, …`
 * (`main` is the thread whose id is the pid; others are numbered by busyness).
 */
export function busiestThreads(
  pid: number,
  a: Map<number, number> | null,
  b: Map<number, number> | null,
  seconds: number,
  top = 4,
): string {
  if (!a || !b) return '-';
  const rows = [...b].map(([tid, cpu]) => [tid, (cpu - (a.get(tid) ?? 0)) / seconds] as const).sort((x, y) => y[1] - x[1]);
  let i = 0;
  return rows
    .slice(0, top)
    .map(([tid, cores]) => `${tid === pid ? 'main' : `thread ${++i}`} ${cores.toFixed(2)}`)
    .join(', ');
}

/**
 * Cores the rest of the machine keeps busy: samples /proc/stat for `ms` while
 * the bench itself is idle. null off Linux.
 */
export async function foreignBusyCores(ms = 1000): Promise<number | null> {
  const sample = (): number[] | null => {
    try {
      const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
      const idle = f[3] + (f[4] ?? 0);
      return [f.slice(0, 8).reduce((a, v) => a + v, 0), idle];
    } catch {
      return null;
    }
  };
  const a = sample();
  await new Promise((ok) => setTimeout(ok, ms));
  const b = sample();
  if (!a || !b || b[0] === a[0]) return null;
  return (1 - (b[1] - a[1]) / (b[0] - a[0])) * availableParallelism();
}

export interface LoadOptions {
  url: string;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /** Server pid, to report its CPU use over the run. */
  serverPid?: number;
}

export interface LoadSummary {
  requests: number;
  seconds: number;
  rps: number;
  latencyMs: { avg: number; p50: number; p90: number; p99: number; max: number };
  bytesPerResponse: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU used over the run, in cores (1.0 = one core busy the whole time). */
  clientCores: number;
  serverCores: number | null;
}

/** The load client (env BENCH_CLIENT): autocannon in this process (default), or wrk as a child process. */
export type LoadClient = 'autocannon' | 'wrk';

export function loadClient(): LoadClient {
  const c = process.env.BENCH_CLIENT ?? 'autocannon';
  if (c !== 'autocannon' && c !== 'wrk') throw new Error(`BENCH_CLIENT must be autocannon or wrk, got '${c}'`);
  return c;
}

/** A describing line for the output: which client runs the load, and where. */
export function clientNote(): string {
  return loadClient() === 'wrk'
    ? `wrk -t${wrkThreads()} (child process; latencies in microseconds)`
    : 'autocannon in the bench process (latencies in whole milliseconds)';
}

const wrkThreads = () => Math.floor(envNumber('BENCH_WRK_THREADS', 1, 1));

/** Keep-alive connections, no pipelining, with the client BENCH_CLIENT names. */
export function runLoad(opts: LoadOptions): Promise<LoadSummary> {
  return loadClient() === 'wrk' ? runWrk(opts) : runAutocannon(opts);
}

/**
 * wrk's `done` hook, printing its figures as one JSON line (latencies in microseconds). status errors are
 * responses outside 2xx/3xx, as autocannon's non2xx counts them.
 */
const WRK_REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"non2xx":%d,"errors":%d,"timeouts":%d,' ..
    '"mean":%.3f,"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.status, e.connect + e.read + e.write, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;

/**
 * One wrk run (`wrk -t<BENCH_WRK_THREADS> -c<connections> -d<seconds>s`), its CPU sampled from /proc while it
 * runs. `script`: Lua of the caller's own (its requests, its response hook: bench/_wrk.ts POSTs with it), to
 * which the report hook is added; without one, wrk GETs `url`.
 */
export async function runWrk(opts: LoadOptions & { script?: string }): Promise<LoadSummary> {
  const dir = tempDir('netsot-wrk-');
  const wrkScript = join(dir.path, 'run.lua');
  writeFileSync(wrkScript, `${opts.script ?? ''}\n${WRK_REPORT}`);
  const args = ['-t', String(wrkThreads()), '-c', String(opts.connections), '-d', `${opts.seconds}s`, '--timeout', '10s', '-s', wrkScript];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(opts.url);
  const srv0 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
  const t0 = performance.now();
  const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  // wrk's own CPU: the last reading before it exits (a finished process's /proc entry is gone).
  let clientCpu = 0;
  const sample = setInterval(() => {
    clientCpu = processCpuSeconds(proc.pid!) ?? clientCpu;
  }, 100);
  const code = await new Promise<number | null>((ok, fail) => {
    proc.once('error', fail);
    proc.once('exit', ok);
  });
  clearInterval(sample);
  dir.remove();
  const wall = (performance.now() - t0) / 1000;
  const srv1 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
  const line = /WRK_JSON (\{.*\})/.exec(out);
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${out}`);
  const r = JSON.parse(line[1]) as Record<string, number>;
  const seconds = r.duration_us / 1e6;
  const ms = (us: number) => us / 1000;
  return {
    requests: r.requests,
    seconds,
    rps: r.requests / seconds,
    latencyMs: { avg: ms(r.mean), p50: ms(r.p50), p90: ms(r.p90), p99: ms(r.p99), max: ms(r.max) },
    bytesPerResponse: r.requests > 0 ? r.bytes / r.requests : 0,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    clientCores: clientCpu / wall,
    serverCores: srv0 !== null && srv1 !== null ? (srv1 - srv0) / wall : null,
  };
}

/** One autocannon run in this process: keep-alive connections, no pipelining. */
async function runAutocannon(opts: LoadOptions): Promise<LoadSummary> {
  const cpu0 = process.cpuUsage();
  const srv0 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
  const t0 = performance.now();
  const r = await autocannon({
    url: opts.url,
    connections: opts.connections,
    pipelining: 1,
    duration: opts.seconds,
    headers: opts.headers,
    timeout: 10,
  });
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const srv1 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
  const seconds = r.duration || wall;
  const requests = r.requests.total;
  return {
    requests,
    seconds,
    rps: requests / seconds,
    latencyMs: { avg: r.latency.average, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    bytesPerResponse: requests > 0 ? r.throughput.total / requests : 0,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    clientCores: (cpu.user + cpu.system) / 1e6 / wall,
    serverCores: srv0 !== null && srv1 !== null ? (srv1 - srv0) / wall : null,
  };
}

/** Several runs of one target as one: summed requests and time, worst p99, summed failures. */
/**
 * `n` single POSTs to `path` over `connections` keep-alive connections, each
 * with the body `bodyOf(i)`; `check(body, i)` judges each 201 (false counts
 * as wrong). Timed to the last reply: autocannon only notices `amount` is
 * reached on its 1 s tick.
 */
export async function postSingles(
  server: ChildServer,
  opts: {
    path: string;
    n: number;
    connections: number;
    bodyOf: (i: number) => string;
    check?: (body: string, i: number) => boolean;
  },
) {
  let next = 0;
  let created = 0;
  let wrong = 0;
  let last = 0;
  const cpu0 = processCpuSeconds(server.pid);
  const t0 = performance.now();
  const r = await autocannon({
    url: server.base,
    connections: Math.min(opts.connections, opts.n),
    pipelining: 1,
    amount: opts.n,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: opts.path,
        headers: { ...AUTH, 'Content-Type': 'application/json' },
        setupRequest: (req, context) => {
          const i = next++;
          context.i = i;
          return { ...req, body: opts.bodyOf(i) };
        },
        onResponse: (status, body, context) => {
          last = performance.now();
          if (status !== 201) return;
          created++;
          if (opts.check && !opts.check(body, context.i as number)) wrong++;
        },
      },
    ],
  });
  const cpu1 = processCpuSeconds(server.pid);
  return {
    ms: last - t0,
    sent: next,
    completed: created,
    wrong,
    failed: r.non2xx + r.errors + r.timeouts,
    p50: r.latency.p50,
    p99: r.latency.p99,
    serverCpuS: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null,
  };
}

export function combine(runs: LoadSummary[]): LoadSummary {
  const requests = runs.reduce((a, r) => a + r.requests, 0);
  const seconds = runs.reduce((a, r) => a + r.seconds, 0);
  const weighted = (f: (r: LoadSummary) => number) => runs.reduce((a, r) => a + f(r) * r.seconds, 0) / seconds;
  const servers = runs.map((r) => r.serverCores);
  return {
    requests,
    seconds,
    rps: requests / seconds,
    latencyMs: {
      avg: weighted((r) => r.latencyMs.avg),
      p50: Math.max(...runs.map((r) => r.latencyMs.p50)),
      p90: Math.max(...runs.map((r) => r.latencyMs.p90)),
      p99: Math.max(...runs.map((r) => r.latencyMs.p99)),
      max: Math.max(...runs.map((r) => r.latencyMs.max)),
    },
    bytesPerResponse: weighted((r) => r.bytesPerResponse),
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    timeouts: runs.reduce((a, r) => a + r.timeouts, 0),
    clientCores: weighted((r) => r.clientCores),
    serverCores: servers.every((s) => s !== null) ? weighted((r) => r.serverCores!) : null,
  };
}

export function failures(s: LoadSummary): number {
  return s.non2xx + s.errors + s.timeouts;
}

// ---------------------------------------------------------------- samples

export interface Stats {
  n: number;
  mean: number;
  p50: number;
  p99: number;
  min: number;
  max: number;
}

/** Mean, nearest-rank p50/p99, min and max of timing samples. */
export function stats(samples: number[]): Stats {
  const s = [...samples].sort((a, b) => a - b);
  const rank = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { n: s.length, mean: s.reduce((a, v) => a + v, 0) / s.length, p50: rank(0.5), p99: rank(0.99), min: s[0], max: s[s.length - 1] };
}

/**
 * Memory of a process in bytes, from /proc/<pid>/status: resident (VmRSS) and
 * peak resident (VmHWM), and the resident split into anonymous memory (RssAnon:
 * heaps) and file pages mapped in (RssFile: e.g. an mmapped LMDB file, which the
 * page cache holds anyway); null off Linux.
 */
export function processMemory(pid: number): { rss: number; peak: number; anon: number; file: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), peak: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
  } catch {
    return null;
  }
}

/**
 * Runs part of a scenario in a fresh process (this bench again, `env` naming the part), so heap and GC
 * state do not carry over between parts: its lines are logged here, except the one starting with `marker`,
 * whose rest is its result as JSON.
 */
export function childResult<T>(scenario: string, env: Record<string, string>, marker: string, what: string, nodeArgs: string[] = []): T {
  const child = spawnSync(process.execPath, [...nodeArgs, ...process.execArgv, process.argv[1], scenario], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  const lines = (child.stdout ?? '').split('\n');
  for (const line of lines) if (line && !line.startsWith(marker)) log(line);
  const result = lines.find((l) => l.startsWith(marker));
  if (child.status !== 0 || !result) throw new Error(`${what}: the child process failed (status ${child.status})`);
  return JSON.parse(result.slice(marker.length)) as T;
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// ---------------------------------------------------------------- output

export function machine(): { node: string; cores: number; platform: string } {
  return { node: process.version, cores: availableParallelism(), platform: `${process.platform}/${process.arch}` };
}

/** The 1, 5 and 15 minute load averages, for the log of a run on a shared machine. */
export function loadAverage(): string {
  return `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(', ')}`;
}

export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export const fmt = {
  int: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (n: number) => n.toFixed(2),
  pct: (n: number) => `${(n * 100).toFixed(1)} %`,
  cores: (n: number | null) => (n === null ? '-' : n.toFixed(2)),
  mb: (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`,
};

export function log(msg: string): void {
  process.stdout.write(`${msg}\n`);
}
