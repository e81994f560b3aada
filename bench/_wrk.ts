/**
 * wrk as a load client for POSTs whose every reply body matters (the alloc
 * bench records each address handed out). wrk (C, one event loop per
 * thread) spends far less CPU per request than autocannon in the bench
 * process, so on 2 cores the server, not the client, is what saturates.
 *
 * A generated Lua script sends the POSTs (cycling over the given paths per
 * connection) and writes every 200 body as one line to a file per wrk
 * thread; the run itself, its report and its CPU figures are the harness's
 * `runWrk`, the same as for GETs.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type LoadSummary, runWrk, tempDir } from './_harness.js';

export interface WrkPostOptions {
  /** Server base URL, e.g. http://127.0.0.1:8080 */
  base: string;
  /** Paths POSTed in turn by each connection. */
  paths: string[];
  headers: Record<string, string>;
  connections: number;
  seconds: number;
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
`;
}

/**
 * One wrk run: keep-alive connections, no pipelining, `seconds` long. Returns
 * its summary (requests = 200s, as autocannon's onResponse count in the alloc
 * bench) and every 200 body. Bodies are flushed when wrk exits, so replies
 * cut off at the end are neither counted nor recorded.
 */
export async function wrkPost(opts: WrkPostOptions): Promise<{ summary: LoadSummary; bodies: string[] }> {
  const dir = tempDir('netsot-wrk-bodies-');
  try {
    const run = await runWrk({
      url: opts.base,
      connections: opts.connections,
      seconds: opts.seconds,
      serverPid: opts.serverPid,
      script: script(opts, dir.path),
    });
    const bodies: string[] = [];
    for (const f of readdirSync(dir.path).filter((n) => n.startsWith('bodies-'))) {
      for (const b of readFileSync(join(dir.path, f), 'utf8').split('\n')) if (b) bodies.push(b);
    }
    const summary = {
      ...run,
      requests: bodies.length,
      rps: bodies.length / run.seconds,
      non2xx: Math.max(0, run.requests - bodies.length),
    };
    return { bodies, summary };
  } finally {
    dir.remove();
  }
}
