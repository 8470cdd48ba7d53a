import { describe, expect, it } from 'vitest';
import { isAppError } from '@aex/contracts';
import { purchaseAnswer } from '../src/purchases/aggregate.js';
import type { VersionedRow } from '../src/purchases/repository.js';
import { AS_OWNER, stateOf } from './purchase-fixtures.js';

// How an approval is answered once its step committed and its wait ended (D9.9, D10.3), on the
// state as the wait left it: a cancel or a denial that ended the purchase meanwhile made the move,
// so the approval lost the race and is refused with the status it found (D9.14).

const approvalAnswer = (state: string) => {
  const t = { ...stateOf(state), input: {}, output: null, metadata: {}, version: '1' } as VersionedRow;
  return purchaseAnswer({ command: { kind: 'approve', caller: AS_OWNER }, state: t, decision: { kind: 'changed', changes: {}, effects: [] }, stillInFlight: false });
};

describe('the answer to an approval (D9.14, D10.3)', () => {
  it('is 200 once its hold is held, 202 while it is on its way', () => {
    expect([approvalAnswer('funds_held/held'), approvalAnswer('awaiting_approval/requested')]).toEqual([200, 202]);
  });

  it('is 409 INVALID_STATE with the status when another request ended the purchase before its hold was held, or while it is returned', () => {
    for (const [state, details] of [['cancelled/returned', { status: 'cancelled' }], ['awaiting_approval/returning → cancelled', { status: 'awaiting_approval', ending: 'cancelled' }]] as const) {
      const answer = approvalAnswer(state);
      expect(isAppError(answer) && answer.code, state).toBe('INVALID_STATE');
      if (isAppError(answer)) expect({ status: answer.status, details: answer.entries[0]!.details }, state).toEqual({ status: 409, details });
    }
  });
});
