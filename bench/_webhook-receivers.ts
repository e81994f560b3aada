/**
 * The webhook bench's receivers, as a child process of bench/webhooks.ts
 * (forked, so their CPU is neither the server's nor the load generator's,
 * and is measured apart): `count` HTTP servers on 127.0.0.1, each answering
 * every request 200 once it has read the body. Cheap on purpose, as a
 * receiver on another machine would cost this one nothing: no parsing and
 * no signature check (the API tests check those, test/api/webhooks.test.ts),
 * only the bytes read and counted.
 *
 * Messages to the parent: {ports} once every server listens; on {report}:
 * {requests, bytes} since the start.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const count = Number(process.env.BENCH_WEBHOOK_RECEIVERS ?? '10');
let requests = 0;
let bytes = 0;

const ports = await Promise.all(
  Array.from(
    { length: count },
    () =>
      new Promise<number>((resolve) => {
        const server = createServer((req, res) => {
          req.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          req.on('end', () => {
            requests++;
            res.writeHead(200, { 'Content-Length': '0' }).end();
          });
        });
        server.keepAliveTimeout = 60_000;
        server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
      }),
  ),
);
process.send!({ ports });
process.on('message', (msg: { report?: boolean }) => {
  if (msg.report) process.send!({ requests, bytes });
});
