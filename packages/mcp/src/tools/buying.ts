import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { listPrice, NegotiationView } from '@aex/contracts';
import { checkAgainstContract, describeProblems } from '@aex/agent-kit';
import { contract, ok, waitFor } from './exchange-calls.js';
import { nextStep } from './next-step.js';
import { TxId, TxOut, Uuid, WaitSeconds } from './schemas.js';
import { summarize, TransactionSummary } from './summary.js';
import { withinLimits } from './spending-limits.js';
import { IRREVERSIBLE, READ, tool, ToolFailure, WRITE } from './tool.js';

/** Key order does not change the key: the same purchase asked twice is the same Idempotency-Key. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export const buyService = tool({
  name: 'buy_service',
  title: 'Buy a service',
  description:
    'Buys a service: the input is checked against the contract first, the price is held from the wallet (escrow) and the provider is asked to deliver. Waits until the funds are held (progress is reported). ' +
    'A price above the per-call cap or the session budget the human set is refused or asked of the human. Calling again with the same arguments returns the same purchase and never buys twice; to buy the same thing again on purpose, pass a new `orderRef`. ' +
    'Give `maxPriceCents` below the price (or buy a negotiable service) to open a negotiation instead: the status is then `negotiating` and you continue with negotiate. ' +
    'Pass the `queryId` search_services answered when you found the service there.',
  input: Type.Object({
    serviceId: Uuid,
    input: Type.Record(Type.String(), Type.Unknown(), { description: 'Must pass the service\'s inputSchema' }),
    units: Type.Optional(Type.Integer({ minimum: 1, description: 'For per_unit and tiered pricing (default 1)' })),
    maxPriceCents: Type.Optional(Type.Integer({ minimum: 1, description: 'Your opening offer, when negotiating' })),
    orderRef: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Makes an otherwise identical purchase a new one' })),
    queryId: Type.Optional(Type.String({ format: 'uuid', description: 'The queryId search_services answered when you found this service: the exchange learns from how the purchase ends' })),
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
    const key = `mcp-buy-${createHash('sha256').update(canonical({ agent: ctx.profile.agentId, serviceId: args.serviceId, input: args.input, units, max: args.maxPriceCents ?? null, ref: args.orderRef ?? null, ...(args.queryId ? { query: args.queryId } : {}) })).digest('hex').slice(0, 48)}`;
    await withinLimits(ctx, key, committing, `"${service.name}"`);
    await ctx.progress(`buying "${service.name}" for ${committing} cents`);
    const created = await ctx.client.createTransaction(
      { serviceId: args.serviceId, input: args.input, ...(args.units ? { units: args.units } : {}), ...(args.maxPriceCents ? { maxPriceCents: args.maxPriceCents } : {}), ...(args.queryId ? { queryId: args.queryId } : {}) },
      { idempotencyKey: key },
    );
    const tx = ok(created);
    const replayed = created.ok && created.headers.get('idempotent-replayed') === 'true';
    if (!(replayed && ctx.guard.committedFor(tx.id) !== undefined)) ctx.guard.commit(key, committing);
    ctx.guard.rename(key, tx.id);
    const waited = await waitFor(ctx, tx.id, ['funds_held', 'executing', 'delivered', 'negotiating', 'awaiting_approval', 'settled'], args.waitSeconds, 'purchase');
    const now = waited.transaction;
    const note = replayed ? 'This repeats an earlier identical call: the purchase it made is returned, nothing was bought again. ' : '';
    return { transaction: summarize(now, { serviceName: service.name }), note: note + nextStep(now.status, now) };
  },
});

export const negotiate = tool({
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
  output: Type.Object({ transaction: TransactionSummary, negotiation: Type.Array(NegotiationView), note: Type.String() }),
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
    return { transaction: summarize(after), negotiation: ok(await ctx.client.negotiations(tx.id)), note: nextStep(after.status) };
  },
});

export const waitForDelivery = tool({
  name: 'wait_for_delivery',
  title: 'Wait for delivery',
  description: 'Waits (reporting progress) until the provider delivers, or the transaction ends, or the time is up; answers the transaction with its output. Call again if it is still in progress.',
  input: Type.Object({ transactionId: Uuid, waitSeconds: WaitSeconds }, { additionalProperties: false }),
  output: Type.Object({ transaction: TransactionSummary, delivered: Type.Boolean(), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const waited = await waitFor(ctx, args.transactionId, ['delivered', 'disputed'], args.waitSeconds, 'waiting for delivery');
    const tx = waited.transaction;
    const note = waited.reached || !('timedOut' in waited) || !waited.timedOut ? nextStep(tx.status) : `Still ${tx.status}: call wait_for_delivery again.`;
    return { transaction: summarize(tx), delivered: tx.status === 'delivered', note };
  },
});

export const acceptDelivery = tool({
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
    return { transaction: summarize(done), note: nextStep(done.status) };
  },
});

export const cancelTransaction = tool({
  name: 'cancel_transaction',
  title: 'Cancel a transaction',
  description: 'Cancels a transaction before the work is delivered (while negotiating, awaiting approval or with funds held); held funds return to the wallet.',
  input: TxId,
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const tx = ok(await ctx.client.cancel(args.transactionId));
    return { transaction: summarize(tx), note: nextStep(tx.status) };
  },
});
