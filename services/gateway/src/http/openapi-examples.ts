/**
 * Request and response examples of the OpenAPI document, by operationId: the calls of a first
 * purchase (README "Your first purchase"), with values of the shapes the exchange answers.
 */
const AGENT = '3f1c2a9e-5b7d-4e8f-9a1b-2c3d4e5f6a7b';
const PROVIDER = '8a7b6c5d-4e3f-4a2b-8c1d-0e9f8a7b6c5d';
const SERVICE = 'c0ffee00-1234-4abc-9def-0123456789ab';
const TX = 'b4d5e6f7-0819-4a2b-8c3d-4e5f60718293';
const AT = '2026-01-31T12:00:00.000Z';

const transaction = {
  id: TX, consumerAgentId: AGENT, providerAgentId: PROVIDER, serviceId: SERVICE, serviceName: 'Text summariser', providerName: 'Acme', status: 'funds_held', input: { text: 'the quick brown fox' },
  agreedPriceCents: 250, platformFeeCents: 13, initiatedAt: AT, fundsHeldAt: AT, expiresAt: '2026-01-31T12:01:00.000Z', metadata: {},
  createdAt: AT, updatedAt: AT, serviceVersion: '1.0.0', units: 1, sessionId: null, metered: false, maxUnits: null, x402: false, output: null, deliveredAt: null, settledAt: null, statusReason: null,
  qualityScore: null, notes: null, deliveryAttempts: 0, maxDeliveryAttempts: 3, reviewEndsAt: null, disputeId: null, approval: null,
};

export const OPERATION_EXAMPLES: Record<string, { request?: unknown; response?: unknown }> = {
  createAccount: {
    request: { accountType: 'individual', email: 'you@example.com', displayName: 'You', agent: { name: 'my-agent' } },
  },
  updateAgent: { request: { signingKeyPublic: 'u/oNyuK0JVv5BfMAj5VgrHhvHJ/Cp5wP2y2JIGT6pVM=' } },
  createService: {
    request: {
      name: 'Word counter', description: 'Counts the words of an English text.', version: '1.0.0', category: 'text', tags: ['nlp'],
      inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string', maxLength: 10000 } } },
      outputSchema: { type: 'object', required: ['words'], properties: { words: { type: 'integer', minimum: 0 } } },
      pricing: { model: 'fixed', basePriceCents: 250 },
      sla: { maxLatencyMs: 5000, timeoutMs: 60000 },
    },
  },
  discover: { request: { need: 'count the words in a text', maxBudgetCents: 500 } },
  createTransaction: {
    request: { serviceId: SERVICE, input: { text: 'the quick brown fox' } },
    response: { data: transaction, meta: { requestId: '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a', timestamp: AT }, errors: null },
  },
  negotiate: { request: { type: 'counter_offer', terms: { priceCents: 800 }, message: 'meet me halfway' } },
  deliver: { request: { output: { words: 4 } } },
  verify: { request: { qualityScore: 95, notes: 'correct' } },
  fund: { request: { amountCents: 5000 } },
  withdraw: { request: { amountCents: 2500 } },
  openDispute: { request: { reason: 'schema_compliant_but_wrong', description: 'The text has four words, not five.', evidence: { expected: 4, got: 5 } } },
};
