/**
 * The requests in flight, and the drain SIGTERM waits for (README, "Hostile input, failures and
 * limits": the probes and SIGTERM): once draining, new requests get 503 and their connection closed,
 * so keep-alive clients reconnect elsewhere, while every request already running is answered (each
 * write among them committed first, as always).
 */
export class InFlight {
  /** Requests whose lifecycle has not finished. */
  count = 0;
  /** SIGTERM came: /readyz answers 503, while the node still serves during SHUTDOWN_DELAY and then drains. */
  stopping = false;
  draining = false;
  private drained: (() => void) | null = null;
  /** For an Exchange's `closing`: every answer closes its connection once draining. */
  readonly isDraining = () => this.draining;

  /** Counts `lifecycle` in flight until it settles; it must not reject (the lifecycle turns every error into a response). */
  track(lifecycle: Promise<void>): void {
    this.count++;
    lifecycle.finally(() => {
      if (--this.count === 0) this.drained?.();
    });
  }

  /** The first step of a stop with SHUTDOWN_DELAY: not ready, still serving. */
  stopSoon(): void {
    this.stopping = true;
  }

  /** Stops taking requests; resolves true once every request in flight has been answered, false after `timeoutMs`. */
  drain(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    this.draining = true;
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.drained = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}
