/**
 * Examples for the OpenAPI document, recorded from real responses by
 * test/api/openapi.test.ts (`RECORD_EXAMPLES=1 npx vitest run test/api/openapi.test.ts`),
 * which also fails when they no longer match what the server answers.
 */
export const EXAMPLES: { schemas: Record<string, unknown>; root: Record<string, unknown>; error: unknown } = {
  schemas: {},
  root: {},
  error: { error: { code: 400, message: { name: ['This field is required.'] } } },
};
