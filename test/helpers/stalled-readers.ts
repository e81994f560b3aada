/**
 * Feed consumers that stop reading, as a hostile client makes them: many TCP
 * connections with a small receive buffer, each sending one GET and then
 * reading nothing but its status line. Node cannot set SO_RCVBUF on a TCP
 * socket (and a socket it merely pauses keeps the default 128 KiB window), so
 * the sockets are opened by a short perl program: perl-base is part of every
 * Debian and Ubuntu system. Used by test/api/feed-replay.test.ts and
 * bench/feed-replay.ts.
 */
import { spawn } from 'node:child_process';

/**
 * Opens `count` connections, sends each request, reads each status line
 * (12 bytes), prints one line "<status> <status> …", then holds the sockets
 * open without reading until its stdin closes.
 */
const PROGRAM = String.raw`
use strict; use Socket;
my ($port, $count, $path, $rcvbuf, $users) = @ARGV;
my @socks;
for my $i (0 .. $count - 1) {
  socket(my $s, PF_INET, SOCK_STREAM, getprotobyname('tcp')) or die "socket: $!";
  setsockopt($s, SOL_SOCKET, SO_RCVBUF, pack('i', $rcvbuf)) or die "setsockopt: $!";
  connect($s, sockaddr_in($port, inet_aton('127.0.0.1'))) or die "connect: $!";
  my $user = $i % $users;
  send($s, "GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Service-Email: feed-reader-$user\@example.com\r\n\r\n", 0);
  push @socks, $s;
}
my @statuses;
for my $s (@socks) {
  my $head = '';
  while (length($head) < 12) { my $got = ''; defined(recv($s, $got, 12 - length($head), 0)) or last; last if $got eq ''; $head .= $got; }
  push @statuses, ($head =~ m{^HTTP/1\.1 (\d{3})} ? $1 : 0);
}
$| = 1;
print join(' ', @statuses), "\n";
my $line = <STDIN>;
`;

export interface StalledReaders {
  /** Each connection's HTTP status, in the order they were opened (0: no status line). */
  statuses: number[];
  /** Closes every connection and waits for the program to exit. */
  close(): Promise<void>;
}

/**
 * `count` connections to 127.0.0.1:`port` GETting `path`, spread over `users` users
 * (`feed-reader-<n>@example.com`, by the proxy header), each with a receive buffer of `rcvbuf` bytes.
 */
export function openStalledReaders(opts: {
  port: number;
  count: number;
  path: string;
  users: number;
  rcvbuf?: number;
}): Promise<StalledReaders> {
  const args = [String(opts.port), String(opts.count), opts.path, String(opts.rcvbuf ?? 4096), String(opts.users)];
  const proc = spawn('perl', ['-e', PROGRAM, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const close = async () => {
    proc.stdin.end();
    await exited;
  };
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`stalled readers exited with ${code}: ${err}`)));
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ statuses: out.slice(0, nl).split(' ').map(Number), close });
    });
  });
}
