/**
 * The real Debian nginx and HAProxy in front of test nodes, each run from the
 * deployment file netsot ships (deploy/), with only the addresses, the
 * listening port and the password file's path replaced: what is tested is
 * what an operator installs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { debianTools } from './debian.js';
import { fetchResponse, type Response } from './fetch-response.js';
import { freePort } from './free-port.js';

const DEPLOY = resolve(__dirname, '../../deploy');
const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const HAPROXY = process.env.HAPROXY_PATH ?? '/usr/sbin/haproxy';
/** The node addresses the shipped files name, in order. */
const SHIPPED_NODES = ['10.0.0.1:8990', '10.0.0.2:8990'];
/** The user both shipped files authenticate. */
export const PROXY_USER = { email: 'admin@example.com', password: 'change-me' };

export function proxiesAvailable(): boolean {
  return debianTools('PROXY TESTS', [NGINX, HAPROXY], 'apt-get install -y nginx haproxy');
}

/** A proxy process in front of the nodes, and a client that authenticates to it as PROXY_USER. */
export class ProxyServer {
  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly dir: string,
  ) {}

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * As TestServer.request, through the proxy: authenticated by the proxy, and sending an `X-Service-Email` of
   * its own that the proxy must replace (`as`; null sends no credentials at all).
   */
  async request(
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; as?: string | null } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.as !== null) {
      headers.Authorization = `Basic ${Buffer.from(`${PROXY_USER.email}:${PROXY_USER.password}`).toString('base64')}`;
      headers['X-Service-Email'] = opts.as ?? 'intruder@example.com';
    }
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] ??= 'application/json';
    }
    return fetchResponse(this.base + path, { method, headers, body });
  }

  get = (path: string, opts?: Parameters<ProxyServer['request']>[2]) => this.request('GET', path, opts);
  post = (path: string, body?: unknown, opts?: Parameters<ProxyServer['request']>[2]) => this.request('POST', path, { ...opts, body });

  /** deploy/haproxy.cfg in front of `nodes` (ports on 127.0.0.1, in the shipped file's order). */
  static async haproxy(nodes: number[]): Promise<ProxyServer> {
    const dir = mkdtempSync(join('/tmp', 'netsot-haproxy-'));
    const port = await freePort();
    const config = nodeAddresses(readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8'), nodes).replace(
      /^(\s*bind )\S+/m,
      `$1127.0.0.1:${port}`,
    );
    writeFileSync(join(dir, 'haproxy.cfg'), config);
    return ProxyServer.spawn('haproxy', HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], port, dir);
  }

  /** deploy/nginx-netsot.conf in front of `nodes`, inside the smallest nginx.conf that runs it in the foreground. */
  static async nginx(nodes: number[]): Promise<ProxyServer> {
    const dir = mkdtempSync(join('/tmp', 'netsot-nginx-'));
    const port = await freePort();
    writeFileSync(join(dir, 'htpasswd'), `${PROXY_USER.email}:{PLAIN}${PROXY_USER.password}\n`);
    const site = nodeAddresses(readFileSync(join(DEPLOY, 'nginx-netsot.conf'), 'utf8'), nodes)
      .replace(/^(\s*listen )\S+;/m, `$1127.0.0.1:${port};`)
      .replace(/^(\s*auth_basic_user_file )\S+;/m, `$1${join(dir, 'htpasswd')};`);
    writeFileSync(join(dir, 'site.conf'), site);
    mkdirSync(join(dir, 'temp'));
    const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `${t}_temp_path ${join(dir, 'temp', t)};`).join(' ');
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off; master_process off; pid ${join(dir, 'nginx.pid')}; error_log stderr warn;
events { worker_connections 1024; }
http { access_log off; ${temp} include ${join(dir, 'site.conf')}; }
`,
    );
    return ProxyServer.spawn('nginx', NGINX, ['-e', 'stderr', '-p', dir, '-c', join(dir, 'nginx.conf')], port, dir);
  }

  private static async spawn(name: string, bin: string, args: string[], port: number, dir: string): Promise<ProxyServer> {
    const output: string[] = [];
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    const proxy = new ProxyServer(name, child, port, dir);
    // Up once the probe answers through it (any status: the nodes behind may not be checked yet).
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output.join('')}`);
      try {
        await fetch(`${proxy.base}/healthz`);
        return proxy;
      } catch {
        if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port}:\n${output.join('')}`);
        await new Promise((ok) => setTimeout(ok, 50));
      }
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((ok) => this.child.once('exit', ok));
      this.child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function nodeAddresses(text: string, nodes: number[]): string {
  let out = text;
  SHIPPED_NODES.forEach((address, i) => {
    out = out.replaceAll(address, `127.0.0.1:${nodes[i]}`);
  });
  return out;
}
