/**
 * A Vitest reporter that ends the run with one plain line, `N passed, N failed`
 * (and the skipped count when there is one), after the default reporter's
 * summary. CI logs are long; this line is the one to read, and `.ci/run` reads
 * it too. "failed" counts failed tests, files that failed outside any test
 * (an import or a hook), and errors that escaped every test: anything that
 * makes the run red.
 */
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

export default class ClosingLine implements Reporter {
  private line = '';

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of modules) {
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedTests++;
        else skipped++;
      }
      failed += failedTests;
      if (failedTests === 0 && module.state() === 'failed') failed++;
    }
    const skippedText = skipped > 0 ? `, ${skipped} skipped` : '';
    this.line = `${passed} passed, ${failed} failed${skippedText}`;
  }

  // Vitest calls every reporter's onTestRunEnd, then every onFinished in order: the default reporter prints its
  // summary in its onFinished, so the line printed here comes after it.
  onFinished(): void {
    process.stdout.write(`\n${this.line}\n`);
  }
}
