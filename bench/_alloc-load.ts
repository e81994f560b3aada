/**
 * P2's allocation load as the benches that compare a side with and without
 * something (feed.ts, webhooks.ts) run it: `connections` keep-alive
 * connections POSTing one allocation path back to back (autocannon in this
 * process, or wrk), or at a fixed overall rate (autocannon).
 */
import autocannon from 'autocannon';
import { AUTH, type LoadClient } from './_harness.js';
import { wrkPost } from './_wrk.js';

export interface AllocationRun {
  /** Allocations answered 200. */
  allocations: number;
  seconds: number;
  p99: number;
  failures: number;
  /** CPU seconds the load client used. */
  clientCpu: number;
}

/** A runner of the load on `path` for `secs` seconds, at `rate` allocations/s when > 0 (autocannon only). */
export function allocationLoad(o: {
  base: string;
  path: string;
  connections: number;
  client: LoadClient;
}): (secs: number, rate?: number) => Promise<AllocationRun> {
  const { base, path, connections, client } = o;
  return async (secs, rate = 0) => {
    if (client === 'wrk' && rate === 0) {
      const w = await wrkPost({ base, paths: [path], headers: AUTH, connections, seconds: secs });
      const s = w.summary;
      return {
        allocations: s.requests,
        seconds: s.seconds,
        p99: s.latencyMs.p99,
        failures: s.non2xx + s.errors + s.timeouts,
        clientCpu: s.clientCores * s.seconds,
      };
    }
    let ok = 0;
    const cpu0 = process.cpuUsage();
    const r = await autocannon({
      url: base,
      connections,
      pipelining: 1,
      duration: secs,
      timeout: 10,
      ...(rate > 0 ? { overallRate: rate } : {}),
      requests: [{ method: 'POST', path, headers: AUTH, onResponse: (status: number) => void (status === 200 && ok++) }],
    });
    const cpu = process.cpuUsage(cpu0);
    return {
      allocations: ok,
      seconds: r.duration,
      p99: r.latency.p99,
      failures: r.non2xx + r.errors + r.timeouts,
      clientCpu: (cpu.user + cpu.system) / 1e6,
    };
  };
}
