import { describe, expect, test } from 'vitest';
import { type AccessFields, Logger } from '../../src/log.js';

/** The line `log` writes for one call, parsed, without its time. */
function lineOf(call: (log: Logger) => void): { keys: string[]; value: Record<string, unknown> } {
  const lines: string[] = [];
  const log = new Logger('info', { bindings: { thread: 'main' }, write: (l) => lines.push(l) });
  call(log);
  expect(lines).toHaveLength(1);
  expect(lines[0].endsWith('}\n')).toBe(true);
  const { time, ...value } = JSON.parse(lines[0]);
  expect(typeof time).toBe('number');
  return { keys: Object.keys(value), value };
}

const base: AccessFields = {
  reqId: 'c3b0c7a4-3b1e-4c1e-9f1e-2a0b7c1d9e0f',
  method: 'GET',
  route: '/api/devices/{key}/',
  path: '/api/devices/1/',
  status: 200,
  ms: 0.4,
  user: 'admin@localhost',
  client: '10.0.0.1',
  peer: '127.0.0.1',
};

describe('the access line', () => {
  test.each([
    ['plain fields', base],
    ['no user', { ...base, user: undefined }],
    ['text that must be escaped', { ...base, path: '/api/"x"\\y\u0001/', reqId: 'id"\\', client: 'é\ud800', user: 'a\nb@c.d' }],
  ])('the access line with %s is the line pino writes for the same fields', (_name, fields) => {
    const fast = lineOf((log) => log.access(fields));
    const pino = lineOf((log) => log.info('request', { ...fields }));
    expect(fast.value).toEqual(pino.value);
    expect(fast.keys).toEqual(pino.keys);
  });

  test('the access line is not written above info', () => {
    const lines: string[] = [];
    new Logger('warn', { write: (l) => lines.push(l) }).access(base);
    expect(lines).toEqual([]);
  });
});
