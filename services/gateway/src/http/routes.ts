import { catalogOps, identityOps, ProtocolView, transactionOps, walletOps, webhooksOps, type ErrorCode, type Operation, type TSchema } from '@aex/contracts';
import type { RateGroup } from '../guards/rate-limit.js';
import { agentTag } from '@aex/platform';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** One public route: how the gateway authenticates, limits and forwards it. */
export interface RouteSpec {
  method: Method;
  url: string;
  summary: string;
  /** The service operation it calls; routes without one are answered by the gateway itself. */
  op?: Operation;
  auth: 'agent' | 'none' | 'admin';
  /** D4.1 / D4.2 group; null for routes outside rate limiting (health, operator). */
  rateGroup: RateGroup | null;
  /** D3.3: required on creating transactions and deliver; elsewhere verified when present. */
  signature: 'required' | 'optional';
  successStatus: number;
  /**
   * Whether the route takes a JSON body (validated against `op.input.body`); `optional`: a request
   * without one is taken as `{}` (routes whose body fields are all optional).
   */
  body: boolean | 'optional';
  /** For routes the gateway answers itself: the schema of `data`. */
  output?: TSchema;
  /** D6.7, D18.1: the raw document (a DID document, a JWK set), not the envelope; D19.2: x402's own JSON. */
  raw?: 'did+json' | 'jwk-set+json' | 'json';
  /**
   * D13.7: the body is a Stripe event, handed to the operation as its exact bytes with its
   * `Stripe-Signature` header (`{ payload, signature }`), which the wallet verifies.
   */
  stripeEvent?: true;
  tag: string;
  /**
   * The error codes of the operation itself (the OpenAPI document adds those of the edge: validation,
   * authentication, signatures, rate limits, idempotency, availability).
   */
  errors?: ErrorCode[];
  /** D9.9: the operation may answer 202 while a saga finishes. */
  accepted?: boolean;
  /**
   * Answers the replica may keep in memory (docs/gateway-caches.md): the cache key of a request's
   * answer — everything the answer depends on — and the tags identity names when it changes.
   */
  localCache?: (input: { path: Record<string, string> }, caller: { accountId: string }) => { key: string; tags: string[] };
}

const agent = (method: Method, url: string, op: Operation, summary: string, tag: string, extra: Partial<RouteSpec> = {}): RouteSpec => ({
  method, url, op, summary, tag,
  auth: 'agent',
  rateGroup: method === 'GET' ? 'read' : 'write',
  signature: 'optional',
  successStatus: 200,
  body: method !== 'GET' && method !== 'DELETE',
  ...extra,
});

export const routes: RouteSpec[] = [
  { method: 'GET', url: '/v1/protocol', output: ProtocolView, summary: 'Describe the exchange: version, features, limits, fees (D15.1)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, tag: 'protocol' },
  { method: 'POST', url: '/v1/accounts', op: identityOps.createAccount, summary: 'Create an account with its owner agent, API key, wallet and trust score (D6.1)', auth: 'none', rateGroup: 'accounts_ip', signature: 'optional', successStatus: 201, body: true, tag: 'accounts', errors: ['CONFLICT'], accepted: true },
  agent('GET', '/v1/accounts/:accountId', identityOps.getAccount, 'Read the caller’s account (D6.3)', 'accounts', { errors: ['NOT_FOUND'] }),
  agent('GET', '/v1/accounts/:accountId/agents', identityOps.listAccountAgents, 'The account’s agents in full, the owner agent first (agents of the account, D2.3)', 'accounts', { errors: ['NOT_FOUND'] }),
  agent('PATCH', '/v1/accounts/:accountId', identityOps.updateAccount, 'Change the account (owner agent, D2.2)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('PUT', '/v1/accounts/:accountId/delegation', identityOps.setAccountDelegation, 'Replace the account’s default delegation rules: rules not given are removed (owner agent)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('PATCH', '/v1/accounts/:accountId/delegation', identityOps.patchAccountDelegation, 'Change some of the account’s default delegation rules: those not named stay, `null` removes one; answers the rules after and what changed (owner agent, D23.3)', 'accounts', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/agents', identityOps.createAgent, 'Create an agent of the caller’s account (owner agent, D6.4)', 'agents', { successStatus: 201 , errors: ['FORBIDDEN', 'AGENT_INACTIVE', 'LIMIT_REACHED', 'CONFLICT'], accepted: true }),
  agent('GET', '/v1/agents/:agentId/trust', identityOps.getTrust, 'How the agent’s trust score was reached: the outcomes it counts (D15.2, EXT)', 'agents', { errors: ['NOT_FOUND'] }),
  agent('GET', '/v1/agents/:agentId', identityOps.getAgent, 'Read an agent: full for the own account, public profile otherwise (D2.3)', 'agents', {
    errors: ['NOT_FOUND'],
    // Identity's answer depends on the agent and on whether the caller is of its account (D2.3); it
    // names the agent whenever anything the answer shows changes.
    localCache: ({ path }, caller) => ({ key: `agent:${path.agentId}:${caller.accountId}`, tags: [agentTag(path.agentId!)] }),
  }),
  agent('PATCH', '/v1/agents/:agentId', identityOps.updateAgent, 'Change an agent’s profile (the agent or the owner agent)', 'agents', { errors: ['FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'SIGNATURE_REQUIRED'] }),
  agent('DELETE', '/v1/agents/:agentId', identityOps.deactivateAgent, 'Deactivate an agent (owner agent, D6.5)', 'agents', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('GET', '/v1/agents/:agentId/delegation', identityOps.getAgentDelegation, 'Read an agent’s own delegation rules and the rules in force — what its purchases are checked against: the account’s defaults overridden by its own, or for a child its parent’s tightened by its own; any agent of its account reads them (D10.1, D6.8)', 'agents', { body: false, errors: ['NOT_FOUND'] }),
  agent('PUT', '/v1/agents/:agentId/delegation', identityOps.setAgentDelegation, 'Replace one agent’s own delegation rules: rules not given are removed (owner agent)', 'agents', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('PATCH', '/v1/agents/:agentId/delegation', identityOps.patchAgentDelegation, 'Change some of one agent’s own delegation rules: those not named stay, `null` removes one; answers the rules after and what changed (owner agent, D23.3)', 'agents', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/agents/:agentId/spawn', identityOps.spawnAgent, 'Spawn a child agent with a budget moved from the parent’s wallet (the agent or the owner agent, D6.8)', 'agents', { successStatus: 201 , errors: ['FORBIDDEN', 'NOT_FOUND', 'AGENT_INACTIVE', 'INSUFFICIENT_FUNDS', 'LIMIT_REACHED'], accepted: true }),
  agent('POST', '/v1/agents/:agentId/keys/rotate', identityOps.rotateKey, 'Revoke the current API key and issue a new one (D2.5)', 'agents', { rateGroup: 'key_rotation', body: false , errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  { method: 'GET', url: '/v1/agents/:agentId/did.json', op: identityOps.getDidDocument, summary: 'The agent’s DID document in the envelope (D6.7)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, tag: 'agents', errors: ['NOT_FOUND'] },
  { method: 'GET', url: '/agents/:agentId/did.json', op: identityOps.getDidDocument, summary: 'The raw DID document a did:web resolver fetches (D6.7)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, raw: 'did+json', tag: 'agents', errors: ['NOT_FOUND'] },
  agent('POST', '/v1/services', catalogOps.createService, 'Register a service contract; the caller is the provider (D7.1)', 'services', { successStatus: 201 , errors: ['INVALID_SCHEMA', 'AGENT_INACTIVE', 'LIMIT_REACHED'] }),
  agent('GET', '/v1/services', catalogOps.listServices, 'List active services of active providers: filters, sorts, pagination (D7.5)', 'services'),
  agent('POST', '/v1/services/discover', catalogOps.discover, 'Find services by meaning and by input/output compatibility (D8)', 'services', { rateGroup: 'discovery' }),
  agent('GET', '/v1/services/:serviceId', catalogOps.getService, 'Read a service contract with its schemas', 'services', { errors: ['NOT_FOUND'] }),
  agent('PATCH', '/v1/services/:serviceId', catalogOps.updateService, 'Change a service (provider only; D7.6)', 'services', { errors: ['INVALID_SCHEMA', 'FORBIDDEN', 'NOT_FOUND'] }),
  agent('DELETE', '/v1/services/:serviceId', catalogOps.deleteService, 'Deactivate a service (provider only; status inactive, D7.6)', 'services', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/transactions', transactionOps.createTransaction, 'Buy a service: input checked, delegation checked, price held — or negotiation opened, or the owner’s approval awaited (D9, D10.3)', 'transactions', { successStatus: 201, signature: 'required' , errors: ['SCHEMA_VALIDATION_FAILED', 'INSUFFICIENT_FUNDS', 'AGENT_INACTIVE', 'DELEGATION_EXCEEDED', 'NOT_FOUND', 'SERVICE_NOT_ACTIVE', 'LIMIT_REACHED'], accepted: true }),
  agent('GET', '/v1/transactions', transactionOps.listTransactions, 'The caller’s transactions as consumer or provider, newest first (D9.13)', 'transactions'),
  agent('GET', '/v1/transactions/:transactionId', transactionOps.getTransaction, 'Read a transaction (parties only, D9.8)', 'transactions', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/transactions/:transactionId/negotiate', transactionOps.negotiate, 'Counter, accept, reject or withdraw, in turn (D11)', 'transactions', { errors: ['NEGOTIATION_OUT_OF_TURN', 'INVALID_NEGOTIATION_MESSAGE', 'INSUFFICIENT_FUNDS', 'DELEGATION_EXCEEDED', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('GET', '/v1/transactions/:transactionId/negotiations', transactionOps.listNegotiations, 'The negotiation’s messages by round (D11.5)', 'transactions', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/transactions/:transactionId/start', transactionOps.start, 'The provider starts work: executing (EXT, D9.7)', 'transactions', { body: 'optional' , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('POST', '/v1/transactions/:transactionId/deliver', transactionOps.deliver, 'Deliver output, checked against the pinned outputSchema (provider; D9.7)', 'transactions', { signature: 'required' , errors: ['OUTPUT_VALIDATION_FAILED', 'FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('POST', '/v1/transactions/:transactionId/verify', transactionOps.verify, 'Accept the output: settlement to the provider minus the fee (consumer; D9.7, D9.11)', 'transactions', { body: 'optional' , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('POST', '/v1/transactions/:transactionId/cancel', transactionOps.cancel, 'Cancel before executing; held funds return, and the transaction shows cancelled once they have (either party; D9.7, D9.9)', 'transactions', { body: 'optional' , errors: ['NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('POST', '/v1/transactions/:transactionId/approve', transactionOps.approve, 'Approve a purchase awaiting approval: its price is held (the consumer’s account owner agent; D10.3)', 'approvals', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE', 'INSUFFICIENT_FUNDS', 'DELEGATION_EXCEEDED'], accepted: true }),
  agent('POST', '/v1/transactions/:transactionId/deny', transactionOps.deny, 'Deny a purchase awaiting approval: cancelled, approval_denied, once any hold on its way is returned (the consumer’s account owner agent; D10.3)', 'approvals', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('GET', '/v1/accounts/:accountId/transactions', transactionOps.listAccountTransactions, 'The purchases of the account’s agents, newest first, by status or agent (owner agent)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('GET', '/v1/accounts/:accountId/transactions/:transactionId', transactionOps.getAccountTransaction, 'One purchase of the account’s agents with its negotiation and dispute (owner agent)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('GET', '/v1/accounts/:accountId/spending', transactionOps.spending, 'What the account’s agents spent in the last days, by category (owner agent)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('GET', '/v1/accounts/:accountId/approvals', transactionOps.listApprovals, 'The account’s purchases that needed an approval, newest first: pending, decided or all (owner agent; D10.3)', 'approvals', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/sessions', transactionOps.openSession, 'Open a prepaid session: one hold of a budget that many calls reserve from, no saga per call (D17.4)', 'sessions', { successStatus: 201, signature: 'required', errors: ['NOT_FOUND', 'SERVICE_NOT_ACTIVE', 'DELEGATION_EXCEEDED', 'INSUFFICIENT_FUNDS', 'AGENT_INACTIVE'], accepted: true }),
  agent('GET', '/v1/accounts/:accountId/sessions', transactionOps.listAccountSessions, 'The prepaid sessions of the account’s agents, newest first (owner agent; D17.4)', 'accounts', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('GET', '/v1/sessions', transactionOps.listSessions, 'The caller’s sessions as consumer or provider, newest first (D17.4)', 'sessions'),
  agent('GET', '/v1/sessions/:sessionId', transactionOps.getSession, 'Read a session: budget, spent, reserved, remaining, calls (parties only; D17.4)', 'sessions', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/sessions/:sessionId/close', transactionOps.closeSession, 'Close a session: no new calls; the unspent budget returns once every call has ended (either party; D17.6)', 'sessions', { body: 'optional', errors: ['NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('POST', '/v1/sessions/:sessionId/approve', transactionOps.approveSession, 'Approve a session’s budget awaiting approval: it is held (the consumer’s account owner agent; D17.4, D10.3)', 'sessions', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE', 'INSUFFICIENT_FUNDS', 'DELEGATION_EXCEEDED'], accepted: true }),
  agent('POST', '/v1/sessions/:sessionId/deny', transactionOps.denySession, 'Deny a session’s budget awaiting approval (the consumer’s account owner agent; D17.4, D10.3)', 'sessions', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('GET', '/v1/transactions/:transactionId/receipt', transactionOps.getReceipt, 'The ended purchase’s signed receipt: a JWS anyone verifies with /.well-known/jwks.json (parties only; D18.3)', 'receipts', { errors: ['NOT_FOUND', 'INVALID_STATE'] }),
  { method: 'GET', url: '/.well-known/jwks.json', op: transactionOps.receiptKeys, summary: 'The exchange’s receipt keys as a JWK set, current and retired (D18.1)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, raw: 'jwk-set+json', tag: 'receipts' },
  { method: 'GET', url: '/.well-known/did.json', op: transactionOps.exchangeDidDocument, summary: 'The exchange’s own DID document, listing its receipt keys (D18.1)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, raw: 'did+json', tag: 'receipts' },
  agent('POST', '/v1/transactions/:transactionId/dispute', transactionOps.openDispute, 'Dispute a delivered transaction; the hold stays (consumer; D12.1)', 'disputes', { successStatus: 201 , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('GET', '/v1/transactions/:transactionId/dispute', transactionOps.getTransactionDispute, 'The transaction’s dispute (parties only; D12.9)', 'disputes', { errors: ['NOT_FOUND'] }),
  agent('GET', '/v1/disputes/:disputeId', transactionOps.getDispute, 'Read a dispute (parties only; D12.9)', 'disputes', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/disputes/:disputeId/respond', transactionOps.respondDispute, 'Answer a dispute: consumer_wins, partial_refund, provider_redo or contest (provider; D12.3)', 'disputes', { errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('POST', '/v1/disputes/:disputeId/decide', transactionOps.decideDispute, 'Accept or refuse the provider’s proposal (consumer; D12.4)', 'disputes', { errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('POST', '/v1/disputes/:disputeId/withdraw', transactionOps.withdrawDispute, 'Withdraw a dispute: the provider wins (consumer; D12.5)', 'disputes', { body: 'optional' , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'], accepted: true }),
  agent('GET', '/v1/wallets/:agentId', walletOps.getWallet, 'Read a wallet (own, or any of the account for the owner agent; D13.1)', 'wallets', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/wallets/:agentId/fund', walletOps.fund, 'Fund a wallet through the payment processor (D13.4)', 'wallets', { errors: ['NOT_FOUND', 'INVALID_STATE', 'PAYMENTS_NOT_CONFIGURED'] }),
  agent('POST', '/v1/wallets/:agentId/withdraw', walletOps.withdraw, 'Pay out to the linked account (D13.5)', 'wallets', { errors: ['NOT_FOUND', 'INSUFFICIENT_FUNDS', 'INVALID_STATE', 'PAYMENTS_NOT_CONFIGURED'] }),
  agent('GET', '/v1/wallets/:agentId/transactions', walletOps.listLedger, 'The wallet’s ledger, oldest first', 'wallets', { errors: ['NOT_FOUND'] }),
  agent('POST', '/v1/accounts/:accountId/payouts/link', walletOps.linkPayoutAccount, 'Link the Stripe account the account’s payouts go to: answers its onboarding page (owner agent; D13.7)', 'accounts', { body: 'optional', errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE', 'PAYMENTS_NOT_CONFIGURED'] }),
  agent('GET', '/v1/wallets/:agentId/payouts', walletOps.listPayouts, 'The wallet’s payouts, newest first, with the processor’s ids (D13.5, D13.7)', 'wallets', { errors: ['NOT_FOUND'] }),
  agent('GET', '/v1/wallets/:agentId/fundings', walletOps.listFundings, 'The wallet’s funding sessions, newest first: pending, paid (credited once) or expired (D13.4, D13.7)', 'wallets', { errors: ['NOT_FOUND'] }),
  agent('GET', '/v1/agents/:agentId/webhook', webhooksOps.getWebhook, 'The agent’s webhook URL and signing secret (the agent or the owner agent; D14.2, EXT)', 'webhooks', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/agents/:agentId/webhook/secret/rotate', webhooksOps.rotateWebhookSecret, 'A new webhook secret; the old one also signs for 24 h (D14.2, EXT)', 'webhooks', { body: false , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('GET', '/v1/agents/:agentId/webhook/deliveries', webhooksOps.listDeliveries, 'The agent’s webhook deliveries with every attempt, newest first (D14.2, EXT)', 'webhooks', { errors: ['FORBIDDEN', 'NOT_FOUND'] }),
  agent('POST', '/v1/agents/:agentId/webhook/deliveries/:webhookId/retry', webhooksOps.retryDelivery, 'Attempt a dead-lettered delivery again, same webhook-id (D14.4, EXT)', 'webhooks', { body: false , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  agent('POST', '/v1/agents/:agentId/webhook/test', webhooksOps.testWebhook, 'Send a signed webhook.test event now and report the receiver’s answer (D14.2, EXT)', 'webhooks', { body: false , errors: ['FORBIDDEN', 'NOT_FOUND', 'INVALID_STATE'] }),
  { method: 'POST', url: '/v1/payments/stripe/webhook', op: walletOps.stripeWebhook, summary: 'Stripe’s signed events: a paid Checkout Session credits its funding once (D13.7; no bearer, the Stripe-Signature is checked)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: true, stripeEvent: true, tag: 'wallets', errors: ['NOT_FOUND'] },
  { method: 'GET', url: '/sandbox/checkout/:sessionId', op: walletOps.getCheckout, summary: 'The checkout page behind a funding checkoutUrl (D13.4)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, tag: 'wallets', errors: ['NOT_FOUND'] },
  { method: 'POST', url: '/admin/v1/agents/:agentId/suspend', op: identityOps.suspendAgent, summary: 'Suspend an agent: status deactivated (operator, D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator', errors: ['NOT_FOUND'] },
  { method: 'GET', url: '/admin/v1/figures', op: transactionOps.figures, summary: 'The exchange’s figures: money held now; purchases, volume settled and fees per hour (D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
  { method: 'GET', url: '/admin/v1/disputes', op: transactionOps.listDisputes, summary: 'Disputes by status, the oldest deadline first: escalated ones wait for the operator (D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
  { method: 'POST', url: '/admin/v1/disputes/:disputeId/resolve', op: transactionOps.resolveDispute, summary: 'Resolve any unresolved dispute with any outcome (operator, D12.6)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: true, tag: 'operator', errors: ['NOT_FOUND', 'INVALID_STATE'], accepted: true },
  { method: 'GET', url: '/admin/v1/audit', op: identityOps.listOperatorActions, summary: 'The audit log of operator actions, newest first (operator, D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
  { method: 'GET', url: '/admin/v1/webhooks/dead-letters', op: webhooksOps.listDeadLetters, summary: 'Every dead-lettered webhook delivery, most recently failed first (operator, D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
  { method: 'POST', url: '/admin/v1/webhooks/dead-letters/:webhookId/retry', op: webhooksOps.retryDeadLetter, summary: 'Attempt a dead-lettered delivery again, same webhook-id (operator, D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator', errors: ['NOT_FOUND', 'INVALID_STATE'] },
  { method: 'GET', url: '/admin/v1/payments/reconciliation', op: walletOps.reconcilePayments, summary: 'Compare, for a period, what the payment processor says was paid in and out with the ledger’s fundings and payouts (operator, D13.7)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator', errors: ['INVALID_STATE', 'PAYMENTS_NOT_CONFIGURED'] },
  // D19.2: x402 v2's facilitator API, answered in x402's JSON (refusals of the request itself in the envelope).
  { method: 'GET', url: '/x402/supported', op: transactionOps.x402Supported, summary: 'The x402 v2 kinds this facilitator settles: aex-escrow on aex:{domain} (D19.2)', auth: 'none', rateGroup: 'public_ip', signature: 'optional', successStatus: 200, body: false, raw: 'json', tag: 'x402' },
  agent('POST', '/x402/verify', transactionOps.x402Verify, 'Verify an aex-escrow payment and hold its price (the payTo agent; D19.2)', 'x402', { raw: 'json', errors: ['FORBIDDEN'] }),
  agent('POST', '/x402/settle', transactionOps.x402Settle, 'Settle a verified aex-escrow payment: the hold captured, the transaction settled (the payTo agent; D19.2)', 'x402', { raw: 'json', errors: ['FORBIDDEN'] }),
  { method: 'POST', url: '/admin/v1/receipt-keys/rotate', op: transactionOps.rotateReceiptKey, summary: 'A new receipt key signs from now on; receipts of the retired keys keep verifying (operator, D18.4)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
  { method: 'GET', url: '/admin/v1/ledger/check', op: walletOps.checkLedger, summary: 'Check the ledger invariants (operator, D15.3)', auth: 'admin', rateGroup: null, signature: 'optional', successStatus: 200, body: false, tag: 'operator' },
];

/** Regexes of every known path, to tell 405 (known path, other method) from 404. */
export const knownPaths = routes.map((r) => ({ method: r.method, re: new RegExp(`^${r.url.replace(/:[A-Za-z]+/g, '[^/]+')}$`) }));
