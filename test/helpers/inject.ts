/**
 * Test harness: the whole server in this process, without a socket. The app
 * (src/http/app.ts: lifecycle, real shard workers, real LMDB store in a temp
 * data dir) is started here and requests go through `app.inject()`. The
 * interface is TestServer's (server.ts), so a test file moves between the two
 * by its import line; requests are shaped as fetch would send them (URL
 * normalisation, default Accept, Host, Content-Type of a string body), so both
 * see the same answers. Tests about the socket itself stay on TestServer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flagsToSource, type LogLevel, loadConfig } from '../../src/config.js';
import { App } from '../../src/http/app.js';
import { Logger } from '../../src/log.js';
import { storeEnv } from './postgres.js';
import type { Response, StartOptions } from './server.js';

export type { Response, StartOptions } from './server.js';

type RequestOptions = {
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  as?: string | null;
  /** The peer's address the server sees (127.0.0.1 unless given): AUTH_HEADER_TRUSTED_PROXIES is checked against it. */
  peer?: string;
};

/** fetch upper-cases these method names given in any case, and no others. */
const NORMALISED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);

/** Log lines go to `output` (as a spawned server's stdout would) instead of this process's stdout. */
const capturingLogger = (level: LogLevel, output: string[]) => new Logger(level, { write: (text) => output.push(text) });

/** Nothing listens: this is only the port clients name in Host, and so in the links the server builds. */
let nextPort = 40_001;

export class InjectServer {
  readonly port = nextPort++;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly app: App,
    readonly dataDir: string,
    private readonly ownsDir: boolean,
    readonly output: string[],
  ) {}

  static async start(opts: StartOptions = {}): Promise<InjectServer> {
    const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'netsot-test-'));
    const flags = ['--port', '0', '--data-dir', dataDir, '--shards', String(opts.shards ?? 2)];
    const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', ...(await storeEnv(dataDir)), ...opts.env }, flagsToSource(flags));
    const output: string[] = [];
    const app = await App.start(config, capturingLogger(config.logLevel, output));
    return new InjectServer(app, dataDir, opts.dataDir === undefined, output);
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const given: Record<string, string> = { ...opts.headers };
    if (opts.as !== null) given['X-Service-Email'] = opts.as ?? 'admin@localhost';
    let body: string | Buffer | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      given['Content-Type'] ??= 'application/json';
    }
    const upper = method.toUpperCase();
    const sent = NORMALISED_METHODS.has(upper) ? upper : method;
    if ((sent === 'GET' || sent === 'HEAD') && body !== undefined) throw new TypeError('Request with GET/HEAD method cannot have body.');
    const url = new URL(this.base + path);
    const headers: Record<string, string> = {};
    for (const [k, value] of Object.entries(given)) {
      // fetch sends a header value's code points as bytes (refusing any above U+00FF); uWS reads the bytes as UTF-8.
      // It trims surrounding whitespace and refuses NUL, CR and LF inside.
      const trimmed = value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
      // biome-ignore lint/suspicious/noControlCharactersInRegex: a byte string is exactly the code points U+0000 to U+00FF.
      if (/[^\u0000-\u00ff]/.test(trimmed)) throw new TypeError(`Cannot convert header ${k} to a ByteString`);
      if (/[\0\r\n]/.test(trimmed)) throw new TypeError(`Invalid header value for ${k}`);
      const v = Buffer.from(trimmed, 'latin1').toString('utf8');
      const name = k.toLowerCase();
      headers[name] = name in headers ? `${headers[name]}, ${v}` : v;
    }
    headers.host = url.host;
    headers.accept ??= '*/*';
    if (typeof body === 'string') headers['content-type'] ??= 'text/plain;charset=UTF-8';
    const res = await this.app.inject({ method: sent, url: url.pathname + url.search, headers, body, remoteAddress: opts.peer });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) out.append(k, v);
    // Through UTF-8 and back, as over the wire: a lone surrogate arrives as U+FFFD.
    const text = Buffer.from(res.body, 'utf8').toString('utf8');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: out, text, json };
  }

  get = (path: string, opts?: RequestOptions) => this.request('GET', path, opts);
  post = (path: string, body?: unknown, opts?: RequestOptions) => this.request('POST', path, { ...opts, body });
  put = (path: string, body?: unknown, opts?: RequestOptions) => this.request('PUT', path, { ...opts, body });
  patch = (path: string, body?: unknown, opts?: RequestOptions) => this.request('PATCH', path, { ...opts, body });
  delete = (path: string, opts?: RequestOptions) => this.request('DELETE', path, opts);

  /** Stops the shards and closes the store, as a graceful stop does; keeps the data dir unless `cleanup`. */
  async stop(cleanup = true): Promise<void> {
    await (this.closing ??= this.app.close());
    if (cleanup && this.ownsDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}
