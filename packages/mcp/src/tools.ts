import { createHash } from 'node:crypto';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { ExchangeClient, ExchangeError, Outcome } from '@agent-exchange/client';
import {
  CreateServiceBody,
  DiscoveryMatch,
  DisputeView,
  listPrice,
  NegotiationView,
  OpenDisputeBody,
  RespondDisputeBody,
  ServiceView,
  TransactionView,
  UpdateServiceBody,
  WalletView,
} from '@aex/contracts';
import { AWAITING_DELIVERY, checkAgainstContract, describeProblems, waitForStatus, type Profile } from '@aex/agent-kit';
import type { SpendingGuard } from './spending.js';

/** What a tool works with: the agent it acts as, the human's limits, and its way to talk back. */
export interface ToolContext {
  client: ExchangeClient;
  profile: Profile;
  guard: SpendingGuard;
  /** Longest a tool waits for the exchange (funds held, a delivery), unless the call asks for less. */
  maxWaitMs: number;
  pollMs: number;
  /** Reports progress to the client when it asked for it (a progress token); otherwise nothing. */
  progress(message: string): Promise<void>;
  /** Asks the human through the client (MCP elicitation); `unsupported` when the client cannot. */
  askHuman(message: string): Promise<'accepted' | 'declined' | 'unsupported'>;
  signal: AbortSignal;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface Tool<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** Listed only when the human set a budget (or, with `alsoForProviders`, when started as a provider). */
  spending?: boolean;
  /** A spending tool a provider needs without spending (negotiate: a provider's counter-offers). */
  alsoForProviders?: boolean;
  /** Listed only when the server was started as a provider. */
  provider?: boolean;
  run(args: Static<I>, ctx: ToolContext): Promise<Static<O>>;
}

/** A refusal the model should read: the result is marked as an error and carries this text. */
export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
}

const tool = <I extends TSchema, O extends TSchema>(t: Tool<I, O>): Tool => t as unknown as Tool;

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
const IRREVERSIBLE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

const Uuid = Type.String({ format: 'uuid' });
const TxId = Type.Object({ transactionId: Uuid }, { additionalProperties: false });
const WaitSeconds = Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'How long to wait at most (seconds); the server caps it.' }));
const Budget = Type.Object({ budgetCents: Type.Integer(), spentCents: Type.Integer(), remainingCents: Type.Integer(), maxPerCallCents: Type.Integer() });
const TxOut = Type.Object({ transaction: TransactionView, note: Type.String() });

/** The data of a successful call, or a ToolFailure that says what the exchange answered. */
export function ok<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.data;
  throw new ToolFailure(explain(outcome.error));
}

/** An exchange error in words a model (and its human) can act on. */
export function explain(error: ExchangeError): string {
  if (error.code === 'NETWORK_ERROR') return `${error.message} Is the exchange running, and is AEX_URL right?`;
  const lines = [`${error.code} (HTTP ${error.status}): ${error.message}`];
  for (const e of error.errors.slice(1)) lines.push(`${e.code}: ${e.message}${e.field ? ` (${e.field})` : ''}`);
  if (error.errors[0]?.field) lines.push(`field: ${error.errors[0].field}`);
  if (error.status === 401) lines.push('The API key or signing key this server was started with is not accepted: check AEX_API_KEY and AEX_SIGNING_KEY (or the profile).');
  if (error.requestId) lines.push(`request id: ${error.requestId}`);
  return lines.join('\n');
}

/** Key order does not change the key: the same purchase asked twice is the same Idempotency-Key. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Commits the server to paying `cents` for `ref` within the human's limits: over the per-call cap
 * the human is asked (where the client can ask), over the budget nobody can allow it.
 */
async function withinLimits(ctx: ToolContext, ref: string, cents: number, what: string): Promise<void> {
  const { verdict } = ctx.guard.check(ref, cents);
  const { budgetCents, spentCents, maxPerCallCents } = ctx.guard.state;
  if (verdict === 'over_budget') {
    throw new ToolFailure(
      `Refused: ${what} costs ${cents} cents, and this session's budget has ${budgetCents - spentCents} of ${budgetCents} cents left. ` +
        'The budget was set by the human who started this server (AEX_MCP_BUDGET_CENTS or --budget-cents) and no tool can raise it; ask them to restart it with a larger budget.',
    );
  }
  if (verdict === 'over_cap') {
    const answer = await ctx.askHuman(`Your agent wants to spend ${cents} cents on ${what}, above the per-call cap of ${maxPerCallCents} cents you set. Allow this one purchase?`);
    if (answer === 'accepted') return;
    if (answer === 'declined') throw new ToolFailure(`Refused: the human declined ${what} (${cents} cents, above the per-call cap of ${maxPerCallCents} cents).`);
    throw new ToolFailure(
      `Refused: ${what} costs ${cents} cents, above the per-call cap of ${maxPerCallCents} cents set by the human who started this server (AEX_MCP_MAX_PER_CALL_CENTS or --max-per-call-cents). ` +
        'This client cannot ask the human (no MCP elicitation); they can allow it by restarting the server with a higher cap, or by using a client that supports elicitation.',
    );
  }
}

async function waitFor(ctx: ToolContext, transactionId: string, until: readonly string[], waitSeconds: number | undefined, label: string) {
  const timeoutMs = Math.min(ctx.maxWaitMs, waitSeconds === undefined ? ctx.maxWaitMs : waitSeconds * 1000);
  const outcome = await waitForStatus(ctx.client, transactionId, until, {
    timeoutMs,
    intervalMs: ctx.pollMs,
    signal: ctx.signal,
    onStatus: (tx, ms) => ctx.progress(`${label}: ${tx.status}${tx.statusReason ? ` (${tx.statusReason})` : ''} after ${(ms / 1000).toFixed(1)} s`),
  });
  if ('error' in outcome) throw new ToolFailure(explain(outcome.error));
  return outcome;
}

/** The contract of a service and whether it can be bought. */
async function contract(ctx: ToolContext, serviceId: string) {
  return ok(await ctx.client.getService(serviceId));
}

const searchServices = tool({
  name: 'search_services',
  title: 'Search services',
  description:
    'Finds services on the exchange by what you need, in plain words (matched by meaning), with their price in cents, expected latency, the provider\'s trust score (0–100) and how well each fits (compatibility 0–1). ' +
    'Give `inputAvailable` (the input you have) to rank services that accept it first. Then read a service\'s contract with get_service before buying.',
  input: Type.Object({
    need: Type.String({ minLength: 1, maxLength: 2000, description: 'What you need done, e.g. "count the words in a text"' }),
    maxBudgetCents: Type.Optional(Type.Integer({ minimum: 0, description: 'Only services whose price fits' })),
    minTrustScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    category: Type.Optional(Type.String({ maxLength: 100 })),
    inputAvailable: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'An input you have; services that accept it rank first' })),
    urgency: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('normal'), Type.Literal('high')], { description: 'high favours fast services, low cheap ones' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
  }, { additionalProperties: false }),
  output: Type.Object({
    matches: Type.Array(Type.Omit(DiscoveryMatch, ['inputSchema', 'outputSchema'])),
    totalMatches: Type.Integer(),
    warnings: Type.Array(Type.String()),
  }),
  annotations: READ,
  async run(args, ctx) {
    const found = ok(await ctx.client.discover({ ...args, limit: args.limit ?? 5 }));
    return {
      matches: found.matches.map(({ inputSchema: _i, outputSchema: _o, ...m }) => m),
      totalMatches: found.totalMatches,
      warnings: found.warnings.map((w) => w.message),
    };
  },
});

const getService = tool({
  name: 'get_service',
  title: 'Read a service contract',
  description: 'The full contract of a service: its input and output JSON Schemas, pricing (cents), SLA (latency, timeout, retries) and examples. The input you buy with must pass its inputSchema.',
  input: Type.Object({ serviceId: Uuid }, { additionalProperties: false }),
  output: Type.Object({ service: ServiceView }),
  annotations: READ,
  async run(args, ctx) {
    return { service: await contract(ctx, args.serviceId) };
  },
});

const getBalance = tool({
  name: 'get_balance',
  title: 'Wallet balance and budget',
  description: 'The agent\'s wallet (balance, held and available cents) and, when spending is enabled, what is left of the budget the human set for this session.',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ wallet: WalletView, budget: Type.Union([Budget, Type.Null()]) }),
  annotations: READ,
  async run(_args, ctx) {
    return { wallet: ok(await ctx.client.getWallet(ctx.profile.agentId)), budget: ctx.guard.enabled ? ctx.guard.state : null };
  },
});

const buyService = tool({
  name: 'buy_service',
  title: 'Buy a service',
  description:
    'Buys a service: the input is checked against the contract first, the price is held from the wallet (escrow) and the provider is asked to deliver. Waits until the funds are held (progress is reported). ' +
    'A price above the per-call cap or the session budget the human set is refused or asked of the human. Calling again with the same arguments returns the same purchase and never buys twice; to buy the same thing again on purpose, pass a new `orderRef`. ' +
    'Give `maxPriceCents` below the price (or buy a negotiable service) to open a negotiation instead: the status is then `negotiating` and you continue with negotiate.',
  input: Type.Object({
    serviceId: Uuid,
    input: Type.Record(Type.String(), Type.Unknown(), { description: 'Must pass the service\'s inputSchema' }),
    units: Type.Optional(Type.Integer({ minimum: 1, description: 'For per_unit and tiered pricing (default 1)' })),
    maxPriceCents: Type.Optional(Type.Integer({ minimum: 1, description: 'Your opening offer, when negotiating' })),
    orderRef: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Makes an otherwise identical purchase a new one' })),
    waitSeconds: WaitSeconds,
  }, { additionalProperties: false }),
  output: TxOut,
  annotations: { ...WRITE, idempotentHint: true },
  spending: true,
  async run(args, ctx) {
    const service = await contract(ctx, args.serviceId);
    if (service.status !== 'active') throw new ToolFailure(`The service "${service.name}" is ${service.status} and cannot be bought now.`);
    const check = checkAgainstContract(service.inputSchema, args.input, '/input');
    if (check.ok === false) throw new ToolFailure(`Not sent: the input does not pass the service's inputSchema:\n${describeProblems(check.problems)}`);
    const units = args.units ?? 1;
    const price = listPrice(service.pricing, units, Number.MAX_SAFE_INTEGER);
    if (!price.ok) throw new ToolFailure(`Not sent: ${price.message}`);
    // The most this purchase can cost without another call: the opening offer when negotiating.
    const committing = args.maxPriceCents ?? price.cents;
    const key = `mcp-buy-${createHash('sha256').update(canonical({ agent: ctx.profile.agentId, serviceId: args.serviceId, input: args.input, units, max: args.maxPriceCents ?? null, ref: args.orderRef ?? null })).digest('hex').slice(0, 48)}`;
    await withinLimits(ctx, key, committing, `"${service.name}"`);
    await ctx.progress(`buying "${service.name}" for ${committing} cents`);
    const created = await ctx.client.createTransaction(
      { serviceId: args.serviceId, input: args.input, ...(args.units ? { units: args.units } : {}), ...(args.maxPriceCents ? { maxPriceCents: args.maxPriceCents } : {}) },
      { idempotencyKey: key },
    );
    const tx = ok(created);
    const replayed = created.ok && created.headers.get('idempotent-replayed') === 'true';
    if (!(replayed && ctx.guard.committedFor(tx.id) !== undefined)) ctx.guard.commit(key, committing);
    ctx.guard.rename(key, tx.id);
    const waited = await waitFor(ctx, tx.id, ['funds_held', 'executing', 'delivered', 'negotiating', 'awaiting_approval', 'settled'], args.waitSeconds, 'purchase');
    const now = waited.transaction;
    const note = replayed ? 'This repeats an earlier identical call: the purchase it made is returned, nothing was bought again. ' : '';
    return { transaction: now, note: note + nextStep(now.status, now) };
  },
});

/** What the consumer does next, for each status a purchase can be in. */
function nextStep(status: string, tx?: Static<typeof TransactionView>): string {
  switch (status) {
    case 'funds_held':
    case 'executing':
      return 'The funds are held; the provider is working. Call wait_for_delivery.';
    case 'negotiating':
      return 'A negotiation is open: read the offers with get_transaction, then negotiate (counter, accept, reject or withdraw).';
    case 'awaiting_approval':
      return `The purchase awaits a human's approval: its price is over what this agent's spending rules approve${approvalWhy(tx)}. ` +
        `Nothing is held until the account's owner approves it (the owner agent's approve_purchase, \`aex approvals approve\` or the console); denied or undecided by ${tx?.approval?.expiresAt ?? 'its deadline'}, it is cancelled. ` +
        'Tell your human, then call wait_for_delivery: it waits through the approval.';
    case 'delivered':
      return 'Delivered: check the output, then accept_delivery (or open_dispute if it is wrong).';
    case 'initiated':
      return 'The exchange has not confirmed the hold yet; call get_transaction later.';
    case 'settled':
      return 'Settled: the provider has been paid.';
    default:
      return `The transaction is ${status}.`;
  }
}

/** D10.3: the rule a price broke, in words ('' when the viewer may not see it). */
function approvalWhy(tx?: Static<typeof TransactionView>): string {
  const a = tx?.approval;
  if (!a?.rule || a.limit === undefined) return '';
  return a.rule === 'requireHumanApprovalAboveCents' ? ` (${a.attempted} cents, above ${a.limit})` : ` (${a.attempted} cents; only prices below ${a.limit} go through alone)`;
}

const negotiate = tool({
  name: 'negotiate',
  title: 'Negotiate a price',
  description:
    'Answers an open negotiation on your turn: `counter` with a new priceCents, `accept` the latest offer (the price is then held from the wallet), `reject` it (ends the negotiation) or `withdraw`. ' +
    'A counter-offer or an acceptance commits you to that price, so it counts against the per-call cap and the session budget.',
  input: Type.Object({
    transactionId: Uuid,
    action: Type.Union([Type.Literal('counter'), Type.Literal('accept'), Type.Literal('reject'), Type.Literal('withdraw')]),
    priceCents: Type.Optional(Type.Integer({ minimum: 1, description: 'With counter: your price' })),
    message: Type.Optional(Type.String({ maxLength: 1000 })),
  }, { additionalProperties: false }),
  output: Type.Object({ transaction: TransactionView, negotiation: Type.Array(NegotiationView), note: Type.String() }),
  annotations: WRITE,
  spending: true,
  alsoForProviders: true,
  async run(args, ctx) {
    const tx = ok(await ctx.client.getTransaction(args.transactionId));
    if (args.action === 'counter' && args.priceCents === undefined) throw new ToolFailure('A counter-offer needs priceCents.');
    if (args.action !== 'counter' && args.priceCents !== undefined) throw new ToolFailure('priceCents goes only with counter.');
    const iAmConsumer = tx.consumerAgentId === ctx.profile.agentId;
    let committing: number | undefined;
    if (iAmConsumer && args.action === 'counter') committing = args.priceCents;
    if (iAmConsumer && args.action === 'accept') {
      const messages = ok(await ctx.client.negotiations(tx.id));
      committing = [...messages].reverse().find((m) => typeof m.terms?.priceCents === 'number')?.terms?.priceCents as number | undefined;
    }
    if (committing !== undefined) await withinLimits(ctx, tx.id, committing, `transaction ${tx.id}`);
    const type = { counter: 'counter_offer', accept: 'accept', reject: 'reject', withdraw: 'withdraw' } as const;
    const body = { type: type[args.action], terms: args.priceCents !== undefined ? { priceCents: args.priceCents } : {}, ...(args.message ? { message: args.message } : {}) };
    const after = ok(await ctx.client.negotiate(tx.id, body));
    if (committing !== undefined) ctx.guard.commit(tx.id, committing);
    return { transaction: after, negotiation: ok(await ctx.client.negotiations(tx.id)), note: nextStep(after.status) };
  },
});

const getTransaction = tool({
  name: 'get_transaction',
  title: 'Read a transaction',
  description: 'A transaction as it is now: status, price, fee, input, output once delivered, and for a negotiation its messages.',
  input: TxId,
  output: Type.Object({ transaction: TransactionView, negotiation: Type.Array(NegotiationView), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const tx = ok(await ctx.client.getTransaction(args.transactionId));
    const negotiation = tx.status === 'negotiating' || tx.agreedPriceCents === null ? ok(await ctx.client.negotiations(tx.id)) : [];
    return { transaction: tx, negotiation, note: tx.consumerAgentId === ctx.profile.agentId ? nextStep(tx.status) : `You are the provider; the transaction is ${tx.status}.` };
  },
});

const listTransactions = tool({
  name: 'list_transactions',
  title: 'List transactions',
  description: 'The agent\'s transactions, newest first, as consumer or provider.',
  input: Type.Object({
    role: Type.Optional(Type.Union([Type.Literal('consumer'), Type.Literal('provider')])),
    status: Type.Optional(Type.String({ maxLength: 40 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  }, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionView) }),
  annotations: READ,
  async run(args, ctx) {
    return { transactions: ok(await ctx.client.listTransactions({ ...args, limit: args.limit ?? 20 } as Parameters<ExchangeClient['listTransactions']>[0])) };
  },
});

const waitForDelivery = tool({
  name: 'wait_for_delivery',
  title: 'Wait for delivery',
  description: 'Waits (reporting progress) until the provider delivers, or the transaction ends, or the time is up; answers the transaction with its output. Call again if it is still in progress.',
  input: Type.Object({ transactionId: Uuid, waitSeconds: WaitSeconds }, { additionalProperties: false }),
  output: Type.Object({ transaction: TransactionView, delivered: Type.Boolean(), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const waited = await waitFor(ctx, args.transactionId, ['delivered', 'disputed'], args.waitSeconds, 'waiting for delivery');
    const tx = waited.transaction;
    const note = waited.reached || !('timedOut' in waited) || !waited.timedOut ? nextStep(tx.status) : `Still ${tx.status}: call wait_for_delivery again.`;
    return { transaction: tx, delivered: tx.status === 'delivered', note };
  },
});

const acceptDelivery = tool({
  name: 'accept_delivery',
  title: 'Accept a delivery',
  description: 'Accepts a delivered output and pays the provider (the held funds are released to them; this cannot be undone). Give a qualityScore (0–100): it feeds the provider\'s trust score. If the output is wrong, open_dispute instead.',
  input: Type.Object({
    transactionId: Uuid,
    qualityScore: Type.Integer({ minimum: 0, maximum: 100 }),
    notes: Type.Optional(Type.String({ maxLength: 2000 })),
  }, { additionalProperties: false }),
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const tx = ok(await ctx.client.verify(args.transactionId, { qualityScore: args.qualityScore, ...(args.notes ? { notes: args.notes } : {}) }));
    const done = tx.status === 'settled' ? tx : (await waitFor(ctx, tx.id, ['settled'], 30, 'settling')).transaction;
    return { transaction: done, note: nextStep(done.status) };
  },
});

const openDispute = tool({
  name: 'open_dispute',
  title: 'Open a dispute',
  description: 'Disputes a delivery instead of accepting it: the funds stay held while the provider answers (refund, partial refund, redo or contest; an operator decides a contest).',
  input: Type.Composite([TxId, OpenDisputeBody], { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: WRITE,
  async run({ transactionId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.openDispute(transactionId, body as Parameters<ExchangeClient['openDispute']>[1])) };
  },
});

const getDispute = tool({
  name: 'get_dispute',
  title: 'Read a dispute',
  description: 'The dispute of a transaction: its status, the provider\'s proposal, the outcome and every message.',
  input: TxId,
  output: Type.Object({ dispute: DisputeView }),
  annotations: READ,
  async run(args, ctx) {
    return { dispute: ok(await ctx.client.transactionDispute(args.transactionId)) };
  },
});

const decideDispute = tool({
  name: 'decide_dispute',
  title: 'Decide on a dispute proposal',
  description: 'As the consumer, accepts or refuses the provider\'s proposal (partial refund or redo). Refusing escalates the dispute to the operator.',
  input: Type.Object({ disputeId: Uuid, accept: Type.Boolean(), message: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: IRREVERSIBLE,
  async run({ disputeId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.decideDispute(disputeId, body)) };
  },
});

const cancelTransaction = tool({
  name: 'cancel_transaction',
  title: 'Cancel a transaction',
  description: 'Cancels a transaction before the work is delivered (while negotiating, awaiting approval or with funds held); held funds return to the wallet.',
  input: TxId,
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const tx = ok(await ctx.client.cancel(args.transactionId));
    return { transaction: tx, note: nextStep(tx.status) };
  },
});

// --- approvals (D10.3): for the account's owner agent

const listApprovals = tool({
  name: 'list_approvals',
  title: 'Purchases awaiting approval',
  description:
    'For the account\'s owner agent: the purchases of the account\'s agents that wait for a human\'s approval (their price is above what the agents\' spending rules approve), newest first, with the price, the rule and the deadline. ' +
    '`state`: pending (default), decided or all. Another agent is refused (403).',
  input: Type.Object({
    state: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('decided'), Type.Literal('all')])),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  }, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionView), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const accountId = ctx.profile.accountId ?? ok(await ctx.client.getAgent(ctx.profile.agentId) as Outcome<{ accountId: string }>).accountId;
    const transactions = ok(await ctx.client.listApprovals(accountId, { state: args.state ?? 'pending', limit: args.limit ?? 20 }));
    const pending = transactions.filter((t) => t.status === 'awaiting_approval').length;
    return { transactions, note: pending ? `${pending} purchase(s) await a decision: approve_purchase (asks your human first) or deny_purchase.` : 'Nothing awaits a decision.' };
  },
});

const approvePurchase = tool({
  name: 'approve_purchase',
  title: 'Approve a purchase',
  description:
    'For the account\'s owner agent: approves a purchase awaiting approval, so its price is held from the buying agent\'s wallet and the provider may start. ' +
    'The human is asked to confirm first (MCP elicitation); a client that cannot ask cannot approve here — the human then uses `aex approvals approve` or the console.',
  input: TxId,
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const tx = await pendingApproval(ctx, args.transactionId);
    const answer = await ctx.askHuman(`Approve the purchase ${tx.id}: ${tx.agreedPriceCents} cents by agent ${tx.consumerAgentId} for service ${tx.serviceId}${approvalWhy(tx)}?`);
    if (answer === 'declined') throw new ToolFailure('Not approved: the human declined. deny_purchase cancels it; left alone it is cancelled when its approval expires.');
    if (answer === 'unsupported') {
      throw new ToolFailure(`Not approved: an approval is a human's decision, and this client cannot ask the human (no MCP elicitation). They approve with \`aex approvals approve ${tx.id}\` or in the console (/console/).`);
    }
    const after = ok(await ctx.client.approve(tx.id));
    return { transaction: after, note: after.status === 'funds_held' ? 'Approved: the price is held and the provider may start.' : `Approved; the transaction is ${after.status}.` };
  },
});

const denyPurchase = tool({
  name: 'deny_purchase',
  title: 'Deny a purchase',
  description: 'For the account\'s owner agent: denies a purchase awaiting approval. It is cancelled (`approval_denied`) and nothing is paid; the reason is kept with it.',
  input: Type.Object({ transactionId: Uuid, reason: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: false }),
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const after = ok(await ctx.client.deny(args.transactionId, args.reason ? { reason: args.reason } : {}));
    return { transaction: after, note: `Denied: the transaction is ${after.status} (${after.statusReason}).` };
  },
});

/**
 * A purchase awaiting the account's approval, from the owner's inbox — what the human is asked about.
 * (The owner agent is not a party of its agents' purchases, so it cannot read them one by one.)
 */
async function pendingApproval(ctx: ToolContext, transactionId: string): Promise<Static<typeof TransactionView>> {
  const accountId = ctx.profile.accountId ?? ok(await ctx.client.getAgent(ctx.profile.agentId) as Outcome<{ accountId: string }>).accountId;
  for (let offset = 0; ; offset += 100) {
    const page = ok(await ctx.client.listApprovals(accountId, { state: 'pending', limit: 100, offset }));
    const found = page.find((t) => t.id === transactionId);
    if (found) return found;
    if (page.length < 100) throw new ToolFailure(`No purchase ${transactionId} awaits this account's approval: list_approvals shows those that do.`);
  }
}

// --- provider tools

const registerService = tool({
  name: 'register_service',
  title: 'Register a service',
  description: 'Offers a new service on the exchange as this agent: name, description, category, version (semver), input and output JSON Schemas (2020-12), pricing in cents and SLA. Examples must pass the schemas.',
  input: CreateServiceBody,
  output: Type.Object({ service: ServiceView }),
  annotations: WRITE,
  provider: true,
  async run(args, ctx) {
    return { service: ok(await ctx.client.createService(args)) };
  },
});

/** A provider tool that changes one of the agent's services (PATCH /v1/services/{id}). */
const serviceChange = <I extends TSchema>(name: string, title: string, description: string, input: I, changes: (args: Static<I>) => UpdateServiceBody) =>
  tool({
    name, title, description, input,
    output: Type.Object({ service: ServiceView }),
    annotations: { ...WRITE, idempotentHint: true },
    provider: true,
    async run(args, ctx) {
      return { service: ok(await ctx.client.updateService((args as { serviceId: string }).serviceId, changes(args))) };
    },
  });

const updateService = serviceChange(
  'update_service', 'Change a service',
  'Changes one of this agent\'s services (description, version, schemas, pricing, SLA, tags, examples, status). Transactions already made keep the contract they were made with.',
  Type.Object({ serviceId: Uuid, changes: UpdateServiceBody }, { additionalProperties: false }),
  (args) => args.changes,
);

const pauseService = serviceChange(
  'pause_service', 'Pause or resume a service',
  'Pauses one of this agent\'s services (it leaves search and cannot be bought; transactions in progress go on) or resumes it.',
  Type.Object({ serviceId: Uuid, paused: Type.Boolean({ default: true }) }, { additionalProperties: false }),
  (args) => ({ status: args.paused === false ? 'active' : 'paused' }),
);

const listPendingDeliveries = tool({
  name: 'list_pending_deliveries',
  title: 'Transactions waiting for delivery',
  description: 'The transactions in which this agent is the provider and owes a delivery (funds held, work started, or an earlier delivery failed validation), oldest deadline first.',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionView) }),
  annotations: READ,
  provider: true,
  async run(_args, ctx) {
    const lists = await Promise.all(AWAITING_DELIVERY.map(async (status) => ok(await ctx.client.listTransactions({ role: 'provider', status, limit: 100 } as Parameters<ExchangeClient['listTransactions']>[0]))));
    const all = lists.flat().sort((a, b) => (a.expiresAt ?? '').localeCompare(b.expiresAt ?? ''));
    return { transactions: all };
  },
});

const deliver = tool({
  name: 'deliver',
  title: 'Deliver an output',
  description: 'Delivers the output of a transaction this agent provides. The output is checked against the service\'s outputSchema first; an output the exchange refuses uses up one of the delivery attempts the SLA allows.',
  input: Type.Object({ transactionId: Uuid, output: Type.Record(Type.String(), Type.Unknown()) }, { additionalProperties: false }),
  output: TxOut,
  annotations: WRITE,
  provider: true,
  async run(args, ctx) {
    const tx = ok(await ctx.client.getTransaction(args.transactionId));
    if (tx.providerAgentId !== ctx.profile.agentId) throw new ToolFailure('This agent is not the provider of that transaction.');
    const service = await contract(ctx, tx.serviceId);
    // The transaction keeps the contract it was made with: checked here only when that is the current one.
    if (service.version === tx.serviceVersion) {
      const check = checkAgainstContract(service.outputSchema, args.output, '/output');
      if (check.ok === false) throw new ToolFailure(`Not sent (no attempt used): the output does not pass the service's outputSchema:\n${describeProblems(check.problems)}`);
    }
    const after = ok(await ctx.client.deliver(tx.id, args.output));
    return { transaction: after, note: after.status === 'delivered' ? 'Delivered: the consumer now accepts it or disputes it.' : `The transaction is ${after.status}.` };
  },
});

const respondDispute = tool({
  name: 'respond_dispute',
  title: 'Answer a dispute',
  description: 'As the provider, answers a dispute: consumer_wins (full refund), partial_refund (with refundCents), provider_redo (deliver again) or contest (an operator decides).',
  input: Type.Composite([Type.Object({ disputeId: Uuid }), RespondDisputeBody], { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: IRREVERSIBLE,
  provider: true,
  async run({ disputeId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.respondDispute(disputeId, body as Parameters<ExchangeClient['respondDispute']>[1])) };
  },
});

export const TOOLS: readonly Tool[] = [
  searchServices, getService, getBalance, buyService, negotiate, getTransaction, listTransactions, waitForDelivery, acceptDelivery,
  openDispute, getDispute, decideDispute, cancelTransaction, listApprovals, approvePurchase, denyPurchase,
  registerService, updateService, pauseService, listPendingDeliveries, deliver, respondDispute,
];
