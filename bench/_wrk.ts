/**
 * wrk as a load client for POSTs whose every reply body matters (the alloc
 * bench records each address handed out). wrk (C, one event loop per
 * thread) spends far less CPU per request than autocannon in the bench
 * process, so on 2 cores the server, not the client, is what saturates.
 *
 * A generated Lua script sends the POSTs (cycling over the given paths per
 * connection), writes every 200 body as one line to a file per wrk thread,
 * and prints wrk's own summary as one JSON line at the end. The client's
 * CPU is read from /proc while wrk runs (its last sample, ≤ 100 ms before
 * it exits).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type LoadSummary, processCpuSeconds, tempDir } from './_harness.js';

export interface WrkPostOptions {
  /** Server base URL, e.g. http://127.0.0.1:8080 */
  base: string;
  /** Paths POSTed in turn by each connection. */
  paths: string[];
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /** wrk threads (default 1, as the issue's figures: `wrk -t1 -c64`). */
  threads?: number;
  /** Server pid, to report its CPU use over the run. */
  serverPid?: number;
}

/** Whether wrk is on the PATH (`apt-get install -y wrk`). */
export function haveWrk(): boolean {
  return spawnSync('wrk', ['--version'], { encoding: 'utf8' }).error === undefined;
}

const lua = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for these ASCII texts

function script(opts: WrkPostOptions, outDir: string): string {
  const headers = Object.entries(opts.headers)
    .map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`)
    .join('\n');
  return `
wrk.method = "POST"
wrk.body = ""
${headers}
local paths = { ${opts.paths.map(lua).join(', ')} }
local requests = {}
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end
local out
local turn = 0
function init(args)
  -- Built here, not at load: wrk sets the Host header only once the script is loaded.
  for i, p in ipairs(paths) do requests[i] = wrk.format("POST", p) end
  out = io.open(${lua(`${outDir}/bodies-`)} .. id .. ".txt", "w")
end
function request()
  turn = turn + 1
  return requests[(turn % #requests) + 1]
end
function response(status, headers, body)
  if status == 200 then out:write(body, "\\n") end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%f}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
`;
}

/**
 * One wrk run: keep-alive connections, no pipelining, `seconds` long. Returns
 * its summary (requests = 200s, as autocannon's onResponse count in the alloc
 * bench) and every 200 body. Bodies are flushed when wrk exits, so replies
 * cut off at the end are neither counted nor recorded.
 */
export async function wrkPost(opts: WrkPostOptions): Promise<{ summary: LoadSummary; bodies: string[] }> {
  const dir = tempDir('netsot-wrk-');
  try {
    const file = join(dir.path, 'post.lua');
    writeFileSync(file, script(opts, dir.path));
    const srv0 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
    const t0 = performance.now();
    const args = [`-t${opts.threads ?? 1}`, `-c${opts.connections}`, `-d${opts.seconds}s`, '--timeout', '10s', '-s', file, opts.base];
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    let clientCpu = 0;
    const poll = setInterval(() => {
      const c = child.pid ? processCpuSeconds(child.pid) : null;
      if (c !== null) clientCpu = c;
    }, 100);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(poll);
    const wall = (performance.now() - t0) / 1000;
    const srv1 = opts.serverPid ? processCpuSeconds(opts.serverPid) : null;
    const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
    if (code !== 0 || !line) throw new Error(`wrk exited ${code}: ${stderr || stdout}`);
    const w = JSON.parse(line) as Record<string, number>;
    const bodies: string[] = [];
    for (const f of readdirSync(dir.path).filter((n) => n.startsWith('bodies-'))) {
      for (const b of readFileSync(join(dir.path, f), 'utf8').split('\n')) if (b) bodies.push(b);
    }
    const seconds = w.duration_us / 1e6;
    const non2xx = w.requests - bodies.length;
    return {
      bodies,
      summary: {
        requests: bodies.length,
        seconds,
        rps: bodies.length / seconds,
        latencyMs: { avg: w.mean_us / 1000, p50: w.p50_us / 1000, p90: w.p90_us / 1000, p99: w.p99_us / 1000, max: w.max_us / 1000 },
        bytesPerResponse: w.requests > 0 ? w.bytes / w.requests : 0,
        non2xx: Math.max(0, non2xx),
        errors: w.connect + w.read + w.write,
        timeouts: w.timeout,
        clientCores: clientCpu / wall,
        serverCores: srv0 !== null && srv1 !== null ? (srv1 - srv0) / wall : null,
      },
    };
  } finally {
    dir.remove();
  }
}
