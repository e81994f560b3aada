/**
 * bench/feed-replay.ts's WebSocket consumers, as a forked child so their CPU
 * is not the prober's: `count` WebSockets replaying `path` (from `?after=0`)
 * while reading every message as it comes, each noting the newest Change id
 * it got (the last `{"id":<id>,"site":` of a message: the resources this
 * bench writes, devices, have no `"site"` key). Each reconnects after the id
 * an overflow names, as a real consumer would. Sends {done, ms, overflows}
 * to the parent once every reader has reached `head`.
 */
import WebSocket from 'ws';

const cfg = JSON.parse(process.env.BENCH_FEED_WS ?? '{}') as { url: string; count: number; head: number };
const SITE_KEY = Buffer.from(',"site":');
const RESUME = /"resume_after":(\d+)/;

/** The id in `{"id":<id>` just before `at`. */
function idBefore(buf: Buffer, at: number): number {
  let i = at;
  let id = 0;
  for (let scale = 1; i > 0 && buf[i - 1] >= 0x30 && buf[i - 1] <= 0x39; scale *= 10) id += (buf[--i] - 0x30) * scale;
  return id;
}

const started = performance.now();
let done = 0;
let overflows = 0;

function reader(user: number): void {
  let newest = 0;
  const open = (after: number) => {
    const ws = new WebSocket(`${cfg.url}?after=${after}`, { headers: { 'X-Service-Email': `ws-reader-${user}@example.com` } });
    ws.on('message', (data: Buffer) => {
      const resume = RESUME.exec(data.subarray(0, 64).toString('latin1'));
      if (resume) {
        overflows++;
        newest = Number(resume[1]);
        return;
      }
      const at = data.lastIndexOf(SITE_KEY);
      if (at > 0) newest = Math.max(newest, idBefore(data, at));
      if (newest >= cfg.head) {
        ws.terminate();
        if (++done === cfg.count) process.send!({ done, ms: performance.now() - started, overflows });
      }
    });
    ws.on('close', () => {
      if (newest < cfg.head) setTimeout(() => open(newest), 100);
    });
    ws.on('error', () => undefined);
  };
  open(0);
}

for (let i = 0; i < cfg.count; i++) reader(i);
