/**
 * The one logger of the process, backed by pino: every line is a JSON object
 * (`level`, `time` in epoch ms, `pid`, `thread`, `msg`, then the event's own
 * fields), or with LOG_FORMAT=pretty the same line made readable by
 * pino-pretty. The main thread and every shard worker each hold one, at the
 * configured level, all writing to the process's stdout.
 *
 * pino formats; this class buffers: lines are joined and handed to the
 * thread's sink (log-sink.ts) once per event-loop turn, so a busy turn costs
 * one hand-over, not one per request. The sink writes asynchronously, bounded:
 * a line that cannot be written is dropped and counted, never waited for.
 *
 * Callers pass facts as fields and never a request body, header or secret:
 * the access log (http/observe.ts) names each field it writes.
 */
import { type Logger as PinoLogger, pino } from 'pino';
import { prettyFactory } from 'pino-pretty';
import type { LogFormat, LogLevel } from './config.js';
import { logSink } from './log-sink.js';

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
  private buffer: string[] = [];
  private scheduled = false;
  private readonly pino: PinoLogger;
  private readonly rank: number;
  private readonly write: (text: string) => void;
  private readonly pretty: ((line: string) => string) | null;

  constructor(
    readonly level: LogLevel,
    options: LoggerOptions = {},
  ) {
    this.rank = RANK[level];
    this.write =
      options.write ??
      ((text) => {
        logSink().write(text);
      });
    this.pretty =
      options.format === 'pretty'
        ? prettyFactory({ colorize: process.stdout.isTTY === true, translateTime: 'SYS:standard', ignore: 'pid', singleLine: true })
        : null;
    const sink = { write: (line: string) => this.push(line) };
    this.pino = pino({ level, base: { pid: process.pid, ...options.bindings } }, sink);
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

  /** Writes what this turn logged now (before exiting, or when a test reads it). */
  flush(): void {
    this.scheduled = false;
    if (this.buffer.length === 0) return;
    const text = this.buffer.join('');
    this.buffer = [];
    this.write(text);
  }

  /** Hands this turn's lines over, then waits (at most `ms`) until the sink has written them: before the process exits. */
  close(ms: number): Promise<void> {
    this.flush();
    return logSink().drain(ms);
  }

  private push(line: string): void {
    this.buffer.push(this.pretty === null ? line : this.pretty(line));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }
}
