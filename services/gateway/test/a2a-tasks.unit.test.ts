import { describe, expect, it } from 'vitest';
import { TaskState } from '@a2a-js/sdk';
import { TRANSACTION_STATUSES, type TransactionStatus, type TransactionView } from '@aex/contracts';
import { TASK_STATE_OF, taskOf } from '../src/a2a/task-view.js';

// D21.2: a transaction read as an A2A task — the state of each status, and what the task carries.

const BASE = 'https://exchange.example';

function transaction(status: TransactionStatus, over: Partial<TransactionView> = {}): TransactionView {
  const at = '2026-11-28T12:00:00.000Z';
  return {
    id: '3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f', consumerAgentId: '11111111-1111-4111-8111-111111111111', providerAgentId: '22222222-2222-4222-8222-222222222222',
    serviceId: '33333333-3333-4333-8333-333333333333', serviceName: 'Summariser', providerName: 'Acme', status, input: { text: 'hi' }, agreedPriceCents: 1000, platformFeeCents: 50, initiatedAt: at, fundsHeldAt: null,
    expiresAt: null, metadata: {}, createdAt: at, updatedAt: at, serviceVersion: '1.0.0', units: 1, sessionId: null, metered: false, maxUnits: null, output: null,
    deliveredAt: null, settledAt: null, statusReason: null, qualityScore: null, notes: null, deliveryAttempts: 0, maxDeliveryAttempts: 3, reviewEndsAt: null,
    disputeId: null, approval: null, x402: false, ...over,
  };
}

describe('task states of transaction statuses (D21.2)', () => {
  it('maps each status as D21.2 lists it', () => {
    const named = Object.fromEntries(TRANSACTION_STATUSES.map((s) => [s, TaskState[TASK_STATE_OF[s]]]));
    expect(named).toEqual({
      initiated: 'TASK_STATE_SUBMITTED', negotiating: 'TASK_STATE_SUBMITTED', matched: 'TASK_STATE_SUBMITTED',
      awaiting_approval: 'TASK_STATE_AUTH_REQUIRED',
      funds_held: 'TASK_STATE_WORKING', executing: 'TASK_STATE_WORKING', validation_failed: 'TASK_STATE_WORKING',
      // Not listed by D21.2: a dispute keeps the money held and may end in a redo, so not a final state.
      disputed: 'TASK_STATE_WORKING',
      delivered: 'TASK_STATE_COMPLETED', settled: 'TASK_STATE_COMPLETED',
      failed: 'TASK_STATE_FAILED', expired: 'TASK_STATE_FAILED',
      cancelled: 'TASK_STATE_CANCELED',
    });
  });

  it('carries the output as a data artifact once delivered, and none before', () => {
    const output = { digest: 'abc' };
    expect(taskOf(transaction('executing', { output: null }), BASE).artifacts).toEqual([]);
    const done = taskOf(transaction('delivered', { output }), BASE);
    expect(done.artifacts).toHaveLength(1);
    expect(done.artifacts[0]!.parts).toEqual([expect.objectContaining({ content: { $case: 'data', value: output }, mediaType: 'application/json' })]);
    expect(done.status!.message!.parts[0]!.content).toEqual({ $case: 'text', value: expect.stringContaining('verify: true') });
  });

  it('keeps the context the buying message named, and the transaction\'s id otherwise', () => {
    expect(taskOf(transaction('funds_held', { metadata: { a2a: { contextId: 'ctx-1', messageId: 'm-1' } } }), BASE).contextId).toBe('ctx-1');
    const t = transaction('funds_held');
    expect(taskOf(t, BASE)).toMatchObject({ id: t.id, contextId: t.id, metadata: { transactionStatus: 'funds_held', transactionUrl: `${BASE}/v1/transactions/${t.id}` } });
  });

  it('says why a task failed or was canceled', () => {
    const failed = taskOf(transaction('failed', { statusReason: 'sla_timeout' }), BASE);
    expect(failed.status!.message!.parts[0]!.content).toEqual({ $case: 'text', value: 'failed: sla_timeout' });
    expect(failed.metadata).toMatchObject({ statusReason: 'sla_timeout' });
  });
});
