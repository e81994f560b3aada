/**
 * A TCP proxy in a child process of its own, between a netsot node and its
 * database: SIGSTOP on it freezes that link (connections stay open, nothing
 * passes, new connections are accepted by the kernel and never answered),
 * as a partition or a hung middlebox would, while the rest of the machine
 * runs on. `freeze`/`thaw` stop and continue it.
 */
import { type ChildProcess, spawn } from 'node:child_process';

const PROXY = `
const net = require('node:net');
const [host, port] = [process.argv[1], Number(process.argv[2])];
const server = net.createServer((client) => {
  const upstream = net.connect(port, host);
  client.pipe(upstream).pipe(client);
  const end = () => { client.destroy(); upstream.destroy(); };
  client.on('error', end); upstream.on('error', end); client.on('close', end); upstream.on('close', end);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

export class TcpProxy {
  private constructor(
    readonly proc: ChildProcess,
    readonly port: number,
  ) {}

  static async start(host: string, port: number): Promise<TcpProxy> {
    const proc = spawn(process.execPath, ['-e', PROXY, host, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const listening = await new Promise<number>((ok, fail) => {
      proc.stdout!.once('data', (d: Buffer) => ok(Number(d.toString().trim())));
      proc.once('exit', (code) => fail(new Error(`the TCP proxy exited with ${code}`)));
    });
    return new TcpProxy(proc, listening);
  }

  freeze(): void {
    this.proc.kill('SIGSTOP');
  }

  thaw(): void {
    this.proc.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((ok) => this.proc.once('exit', ok));
    this.proc.kill('SIGKILL');
    await exited;
  }
}
