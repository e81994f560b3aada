/**
 * A counting semaphore: at most WEBHOOK_CONCURRENCY delivery attempts in
 * flight over every webhook, so many hooks (or many hanging receivers) hold
 * a bounded number of sockets and timers. Waiters are served in the order
 * they came.
 *
 * | operation | cost |
 * |-----------|------|
 * | acquire / release | O(1) amortised |
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  constructor(size: number) {
    this.free = size;
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head++];
      if (this.head === this.waiting.length) {
        this.waiting.length = 0;
        this.head = 0;
      }
      next();
      return;
    }
    this.free++;
  }
}
