/**
 * Logging with levels. Lines are buffered and written once per event-loop
 * turn, so the access log costs a string push per request, not a syscall.
 * The main thread and every shard worker each hold one, at the configured
 * level, all writing to the process's stdout.
 */
import type { LogLevel } from './config.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export class Logger {
  private buffer: string[] = [];
  private scheduled = false;
  /** `write` takes each turn's lines (stdout; tests collect them instead). */
  constructor(
    private readonly level: LogLevel,
    private readonly write: (text: string) => void = (text) => {
      process.stdout.write(text);
    },
  ) {}

  enabled(level: LogLevel): boolean {
    return RANK[level] >= RANK[this.level];
  }

  log(level: LogLevel, line: string): void {
    if (!this.enabled(level)) return;
    this.buffer.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.scheduled = false;
    if (this.buffer.length === 0) return;
    const text = `${this.buffer.join('\n')}\n`;
    this.buffer = [];
    this.write(text);
  }

  info(line: string): void {
    this.log('info', line);
  }
  warn(line: string): void {
    this.log('warn', line);
  }
  error(line: string): void {
    this.log('error', line);
  }
}
