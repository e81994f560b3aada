/**
 * The webhook bench's receivers, as a child process of bench/webhooks.ts
 * (forked, so their CPU is neither the server's nor the load generator's,
 * and is measured apart): `count` HTTP/1.1 endpoints on 127.0.0.1, each
 * answering every request 200 once it has read the body.
 *
 * Cheap on purpose, as the feed bench's readers are (bench/_feed-subscribers.ts):
 * a receiver on another machine would cost this one nothing, so each is a raw
 * TCP server that finds a request's head, reads Content-Length bytes of body
 * without looking at them, and writes a fixed answer; no HTTP library, no
 * parsing of the Changes, no signature check (the API tests check those,
 * test/api/webhooks.test.ts).
 *
 * Messages to the parent: {ports} once every server listens; on {report}:
 * {requests, bytes} since the start.
 */
import { createServer, type Socket } from 'node:net';

const count = Number(process.env.BENCH_WEBHOOK_RECEIVERS ?? '10');
const OK = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');
const LENGTH = /\r\ncontent-length:\s*(\d+)/i;
let requests = 0;
let bytes = 0;

/** Reads requests off one connection: head, then that many body bytes, then the answer. */
function serve(socket: Socket): void {
  let head: Buffer = Buffer.alloc(0);
  let body = -1;
  socket.on('data', (chunk: Buffer) => {
    let data: Buffer = chunk;
    while (data.length > 0) {
      if (body < 0) {
        head = head.length === 0 ? data : Buffer.concat([head, data]);
        const end = head.indexOf(HEAD_END);
        if (end < 0) return;
        body = Number(LENGTH.exec(head.subarray(0, end).toString('latin1'))?.[1] ?? 0);
        data = head.subarray(end + HEAD_END.length);
        head = Buffer.alloc(0);
      }
      const taken = Math.min(body, data.length);
      bytes += taken;
      body -= taken;
      data = data.subarray(taken);
      if (body === 0) {
        requests++;
        body = -1;
        socket.write(OK);
      }
    }
  });
  socket.on('error', () => undefined);
}

const ports = await Promise.all(
  Array.from(
    { length: count },
    () =>
      new Promise<number>((resolve) => {
        const server = createServer(serve);
        server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
      }),
  ),
);
process.send!({ ports });
process.on('message', (msg: { report?: boolean }) => {
  if (msg.report) process.send!({ requests, bytes });
});
