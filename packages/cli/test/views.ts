import { ACCOUNT_ID, AGENT_ID } from './cli-test.js';

// What the fake exchange answers: views with the fields the CLI reads, in the shapes of @aex/contracts.

export const PROVIDER_ID = '0b000000-0000-4000-8000-00000000000b';
export const SERVICE_ID = '5e000000-0000-4000-8000-00000000005e';
export const TX_ID = '7a000000-0000-4000-8000-00000000007a';
export const DISPUTE_ID = 'd1000000-0000-4000-8000-0000000000d1';
export const WHEN = '2030-01-02T03:04:05.000Z';

export function transactionView(change: Record<string, unknown> = {}) {
  return {
    id: TX_ID, serviceId: SERVICE_ID, serviceVersion: '1.0.0', consumerAgentId: AGENT_ID, providerAgentId: PROVIDER_ID,
    status: 'funds_held', statusReason: null, agreedPriceCents: 250, platformFeeCents: 13, input: { text: 'one two three' }, output: null,
    expiresAt: WHEN, updatedAt: WHEN, approval: null, ...change,
  };
}

export function serviceView(change: Record<string, unknown> = {}) {
  return {
    id: SERVICE_ID, agentId: PROVIDER_ID, name: 'Word counter', description: 'Counts the words in a text.', version: '1.0.0', category: 'text', status: 'active',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
    outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
    pricing: { model: 'fixed', basePriceCents: 250 }, trustScore: 80, providerName: 'Seller', ...change,
  };
}

export function agentView(change: Record<string, unknown> = {}) {
  return { id: AGENT_ID, accountId: ACCOUNT_ID, name: 'Buyer', status: 'active', signingKeyPublic: null, webhookUrl: null, delegation: null, ...change };
}

export function disputeView(change: Record<string, unknown> = {}) {
  return { id: DISPUTE_ID, transactionId: TX_ID, status: 'open', reason: 'output_quality', outcome: null, refundCents: null, proposal: null, ...change };
}

export function walletView(change: Record<string, unknown> = {}) {
  return { agentId: AGENT_ID, balanceCents: 5000, heldCents: 250, availableCents: 4750, lifetimeEarnedCents: 0, lifetimeSpentCents: 1234, ...change };
}
