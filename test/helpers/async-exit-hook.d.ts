/** What test/helpers/embedded-postgres.ts uses of async-exit-hook, which ships no types. */
declare module 'async-exit-hook' {
  const hook: {
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  };
  export default hook;
}
