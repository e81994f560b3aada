/**
 * The one logger of the process, backed by pino: every line is a JSON object
 * (`level`, `time` in epoch ms, `pid`, `thread`, `msg`, then the event's own
 * fields), or with LOG_FORMAT=pretty the same line made readable by
 * pino-pretty. The main thread and every shard worker each hold one, at the
 * configured level, all writing to the process's stdout.
 *
 * pino formats; each line goes to the thread's sink (log-sink.ts), which
 * gathers lines and writes them asynchronously, many at a time, bounded: a
 * line that cannot be written is dropped and counted, never waited for.
 * Under `serve`, the main thread's lines are written by a thread of their
 * own (log-thread.ts).
 *
 * The access line, one per request, is the one line on the hot path: the
 * main thread hands its fields to the writer thread as a compact record, and
 * the line is made there in exactly the shape pino writes (`access`,
 * log-record.ts), without pino's generic serialisation (issue 28: the access
 * log must not cost GETs their throughput).
 *
 * Callers pass facts as fields and never a request body, header or secret:
 * the access log (http/observe.ts) names each field it writes.
 */
import { type Logger as PinoLogger, pino } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.js';
import { type AccessFields, accessLine } from './log-record.js';
import { logSink } from './log-sink.js';

export type { AccessFields } from './log-record.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface LoggerOptions {
  format?: LogFormat;
  /** Fields on every line (`thread: 'shard 1'`). */
  bindings?: LogFields;
  /** Takes each turn's text (the thread's log sink by default; tests collect it instead). */
  write?: (text: string) => void;
}

export class Logger {
  private readonly pino: PinoLogger;
  private readonly rank: number;
  private readonly write: (line: string) => void;
  /** Lines go to the thread's sink (not a test's collector). */
  private readonly toSink: boolean;
  private readonly pretty: ((line: string) => string) | null;
  /** `,"pid":…,"thread":…` as pino writes the bindings after `time`. */
  private readonly bindingsJson: string;

  constructor(
    readonly level: LogLevel,
    options: LoggerOptions = {},
  ) {
    this.rank = RANK[level];
    this.toSink = options.write === undefined;
    this.write =
      options.write ??
      ((line) => {
        logSink().write(line);
      });
    this.pretty =
      options.format === 'pretty'
        ? prettyFactory({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:standard', ignore: 'pid', singleLine: true })
        : null;
    const sink = { write: (line: string) => this.write(this.pretty === null ? line : this.pretty(line)) };
    const base = { pid: process.pid, ...options.bindings };
    this.pino = pino({ level, base }, sink);
    this.bindingsJson = JSON.stringify(base).slice(1, -1);
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] >= this.rank;
  }

  /** One event: `msg` says what happened, `fields` the facts (an `err` field is serialised with its stack). */
  log(level: LogLevel, msg: string, fields?: LogFields): void {
    if (RANK[level] < this.rank) return;
    if (fields === undefined) this.pino[level](msg);
    else this.pino[level](fields, msg);
  }

  info(msg: string, fields?: LogFields): void {
    this.log('info', msg, fields);
  }
  warn(msg: string, fields?: LogFields): void {
    this.log('warn', msg, fields);
  }
  error(msg: string, fields?: LogFields): void {
    this.log('error', msg, fields);
  }

  /**
   * The access line of one request, at info: the line `info('request', a)` writes, built without pino's generic path
   * (log-record.ts), and by the log writer thread where one runs (log-thread.ts).
   */
  access(a: AccessFields): void {
    if (RANK.info < this.rank) return;
    if (this.pretty !== null) {
      this.info('request', { ...a });
      return;
    }
    const time = Date.now();
    const sink = this.toSink ? logSink() : null;
    if (sink?.access !== undefined) sink.access(this.bindingsJson, time, a);
    else this.write(accessLine(this.bindingsJson, time, a));
  }

  /**
   * Whole lines another thread's logger made (a worker's stdout), passed on as they are to where this logger's
   * lines go: the sink, or a test's collector.
   */
  passOn(lines: string): void {
    this.write(lines);
  }

  /** Has the sink start writing what it holds now (before exiting, or when a test reads the output). */
  flush(): void {
    if (this.toSink) logSink().flush();
  }

  /** Writes what was logged, waiting at most `ms` for the sink: before the process exits. */
  close(ms: number): Promise<void> {
    return this.toSink ? logSink().drain(ms) : Promise.resolve();
  }
}
