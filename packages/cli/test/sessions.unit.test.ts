import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';
import { SERVICE_ID, WHEN } from './views.js';

const SESSION_ID = '5c000000-0000-4000-8000-00000000005c';
const QUERY_ID = '9e000000-0000-4000-8000-00000000009e';

describe('session open', () => {
  cliTest('sends the budget and the queryId of the discover the service was found with (D22.2)', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/v1/sessions', {
      status: 201,
      data: { id: SESSION_ID, status: 'open', statusReason: null, budgetCents: 1000, spentCents: 0, reservedCents: 0, remainingCents: 1000, returnedCents: 0, calls: 0, expiresAt: WHEN },
    });
    const r = await aex(['session', 'open', SERVICE_ID, '--budget-cents', '1000', '--query-id', QUERY_ID]);
    expect(exchange.sent('POST', '/v1/sessions')[0]!.body).toEqual({ serviceId: SERVICE_ID, budgetCents: 1000, autoVerify: true, queryId: QUERY_ID });
    expect(r.stdout).toContain(`Session ${SESSION_ID}: open`);
  });
});
