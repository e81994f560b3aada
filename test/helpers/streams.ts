/** Helpers for the streamed-list tests (real HTTP against a TestServer). */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { TestServer } from './server.js';

const AUTH = { 'X-Service-Email': 'admin@localhost' };

/** One sample's value from the server's /metrics. */
export async function metric(s: TestServer, name: string): Promise<number> {
  const text = (await s.get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

/** GET `url` as the admin over node:http, resolving as soon as the response head arrives (the body is the caller's to read). */
export function openGet(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: AUTH }, resolve);
    req.on('error', reject);
    req.end();
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
