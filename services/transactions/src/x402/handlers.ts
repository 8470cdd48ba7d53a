import { randomUUID } from 'node:crypto';
import {
  AEX_ESCROW, AppError, X402_VERSION, aexNetworkOf, exchangeDidOf, identityOps, isAppError,
  type ContractView, type X402FacilitatorBody, type X402SettleResponse, type X402VerifyResponse, type transactionOps,
} from '@aex/contracts';
import { callOrThrow, groupCommitted, isUniqueViolation, requireAgent, type EffectReply, type HandlerContext, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { jsonDigest } from '../domain/digest.js';
import type { Caller, Delegation } from '../domain/purchase.js';
import { ed25519OfMultibase, requirementsProblem, signatureValid, type X402Problem } from '../domain/x402-check.js';
import { contractFor } from '../purchases/handlers.js';
import { rpcTimeout } from '../purchases/delegations.js';

type Ops = typeof transactionOps;

/**
 * D19.2: the x402 v2 facilitator of `aex-escrow`. Its answers are x402's own JSON (the gateway
 * sends them bare): a payment that cannot be made is a verdict (`isValid: false`, `success: false`)
 * with x402's reason, while what is wrong with the request itself — no key, another agent's key,
 * a body that is not x402 — is refused in the exchange's envelope.
 */

/** GET /x402/supported: one kind, `aex-escrow` on this exchange's network. */
export const x402Supported = (deps: TransactionDeps): OperationHandler<Ops['x402Supported']> => async () => ({
  data: {
    kinds: [{ x402Version: X402_VERSION, scheme: AEX_ESCROW, network: aexNetworkOf(deps.config.PUBLIC_BASE_URL) }],
    extensions: [],
    signers: { 'aex:*': [exchangeDidOf(deps.config.PUBLIC_BASE_URL)] },
  },
});

/** The payer as the exchange knows it: who it is (as the buyer of a purchase), its rules in force, and its registered signing key. */
interface Payer {
  caller: Caller;
  delegation: Delegation;
  publicKey: Uint8Array | null;
}

/**
 * D19.2: POST /x402/verify by the `payTo` agent. The payment checked (kind, requirements, validity,
 * the payer's signature), then a new nonce opens a purchase of the service at the amount — D9/D10
 * as any purchase: limits, delegation, approval, the hold — valid once its price is held; a nonce
 * seen before is valid once more only when its purchase is held and no verify answered it valid.
 */
export const x402Verify = (deps: TransactionDeps): OperationHandler<Ops['x402Verify']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  onlyPayTo(body, caller.agentId);
  const payerId = body.paymentPayload.payload.payer;
  const invalid = (p: X402Problem, extra?: X402VerifyResponse['extra']) => verdict(ctx, deps, { isValid: false, invalidReason: p.reason, invalidMessage: p.message, payer: payerId, ...(extra && { extra }) });
  const checked = await checkedPayer(deps, body, ctx);
  if ('reason' in checked) return invalid(checked);
  const { nonce } = body.paymentPayload.payload;
  const known = await purchaseOfNonce(deps, payerId, nonce);
  let step;
  try {
    step = known
      ? await deps.purchases.request(ctx, known.id, { kind: 'x402Claim', caller: asCaller(caller) })
      : await openPayment(deps, ctx, body, checked);
  } catch (err) {
    if (isUniqueViolation(err)) return invalid(USED);
    if (!isAppError(err)) throw err;
    return invalid(problemOf(err, known ? 'nonce_already_used' : 'payment_refused'), known ? { transactionId: known.id, status: known.status } : undefined);
  }
  const t = step.data;
  const extra = { transactionId: t.id, status: t.status };
  if (t.status === 'funds_held') return afterStep(step, { isValid: true, payer: payerId, extra });
  if (t.status === 'awaiting_approval') {
    return afterStep(step, { isValid: false, invalidReason: 'approval_required', invalidMessage: `The payer's account owner must approve transaction ${t.id} (D10.3); once approved, the same payment may be verified once.`, payer: payerId, extra });
  }
  if (t.status === 'failed') return afterStep(step, { isValid: false, invalidReason: 'insufficient_funds', invalidMessage: 'The payer\'s available balance is too low to hold the amount.', payer: payerId, extra });
  return afterStep(step, { isValid: false, invalidReason: 'hold_pending', invalidMessage: `The hold of transaction ${t.id} is not confirmed yet; the same payment may be verified once it is.`, payer: payerId, extra });
};

/**
 * D19.2: POST /x402/settle by the `payTo` agent: the verified payment of this payload captured, its
 * transaction id the x402 transaction reference. A payload the exchange does not know, or whose
 * purchase is another agent's sale, is refused as unknown.
 */
export const x402Settle = (deps: TransactionDeps): OperationHandler<Ops['x402Settle']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  onlyPayTo(body, caller.agentId);
  const network = body.paymentRequirements.network;
  const payerId = body.paymentPayload.payload.payer;
  const failed = (p: X402Problem, transaction = '') => verdict(ctx, deps, { success: false, errorReason: p.reason, errorMessage: p.message, payer: payerId, transaction, network });
  const checked = await checkedPayer(deps, body, ctx, { settling: true });
  if ('reason' in checked) return failed(checked);
  const known = await purchaseOfNonce(deps, payerId, body.paymentPayload.payload.nonce);
  if (!known || known.providerAgentId !== caller.agentId) return failed({ reason: 'unknown_payment', message: 'No verified payment of this payload is yours to settle.' });
  let step;
  try {
    step = await deps.purchases.request(ctx, known.id, { kind: 'x402Settle', caller: asCaller(caller) });
  } catch (err) {
    if (!isAppError(err)) throw err;
    return failed(problemOf(err, 'settle_refused'), known.id);
  }
  const t = step.data;
  const settled: X402SettleResponse = { success: true, payer: payerId, transaction: t.id, network, amount: String(t.agreedPriceCents ?? body.paymentRequirements.amount) };
  return afterStep(step, settled);
};

/** D19.2: the resource server acts for the `payTo` agent, and only that agent's key may speak for it. */
function onlyPayTo(body: X402FacilitatorBody, agentId: string): void {
  if (body.paymentRequirements.payTo !== agentId) {
    throw new AppError('FORBIDDEN', 'Only the payTo agent (the provider paid) verifies or settles its payments, with its own API key.', { field: '/body/paymentRequirements/payTo' });
  }
}

/** The payment's kind and agreement with the requirements, then its payer and the payer's signature. */
async function checkedPayer(deps: TransactionDeps, body: X402FacilitatorBody, ctx: HandlerContext, opts: { settling?: boolean } = {}): Promise<Payer | X402Problem> {
  const problem = requirementsProblem(body, aexNetworkOf(deps.config.PUBLIC_BASE_URL), deps.now());
  // A verified payment is settled after its validBefore as long as its hold stands (maxTimeoutSeconds is its bound).
  if (problem && !(opts.settling && problem.reason === 'payment_expired')) return problem;
  const payer = await payerOf(deps, body.paymentPayload.payload.payer, ctx.requestId);
  if (!payer) return { reason: 'invalid_payer', message: 'The payer is not an agent of this exchange.' };
  if (!payer.publicKey) return { reason: 'invalid_payer', message: 'The payer has no registered signing key.' };
  if (!signatureValid(body, payer.publicKey)) return { reason: 'invalid_signature', message: 'The payment is not signed by the payer\'s registered signing key.' };
  return payer;
}

/** The payer's status, rules in force (read now: D10.1) and current signing key (its DID document, D6.7); null for an unknown agent. */
async function payerOf(deps: TransactionDeps, agentId: string, requestId: string): Promise<Payer | null> {
  const ask = { ctx: { requestId, principal: null }, input: { path: { agentId }, query: {}, body: {} } };
  try {
    const [facts, did] = await Promise.all([
      callOrThrow(deps.bus, identityOps.effectiveDelegation, ask, rpcTimeout(deps.config)),
      callOrThrow(deps.bus, identityOps.getDidDocument, ask, rpcTimeout(deps.config)),
    ]);
    const current = did.verificationMethod.find((m) => did.assertionMethod.includes(m.id) && !m.revoked);
    return {
      caller: { agentId, accountId: facts.accountId, isOwner: facts.ownerAgentId === agentId, status: facts.status },
      delegation: { rules: facts.rules, ownerAgentId: facts.ownerAgentId },
      publicKey: current ? ed25519OfMultibase(current.publicKeyMultibase) : null,
    };
  } catch (err) {
    if (isAppError(err) && err.status === 404) return null;
    throw err;
  }
}

/** The purchase a payer's nonce opened, if any (D19.2: a nonce is used once). */
const purchaseOfNonce = (deps: TransactionDeps, payer: string, nonce: string) =>
  deps.db.selectFrom('transactions').select(['id', 'status', 'providerAgentId']).where('consumerAgentId', '=', payer).where('x402Nonce', '=', nonce).executeTakeFirst();

/**
 * A new purchase for the payment: of the service `extra.serviceId` names, which must be the `payTo`
 * agent's, at the amount signed. Its input is empty (the resource is the HTTP request, which the
 * resource server serves; the contract describes it) and its metadata names the resource.
 */
async function openPayment(deps: TransactionDeps, ctx: HandlerContext, body: X402FacilitatorBody, payer: Payer) {
  const r = body.paymentRequirements;
  let contract: ContractView;
  try {
    contract = await contractFor(deps, r.extra.serviceId, ctx.requestId);
  } catch (err) {
    if (isAppError(err) && err.status === 404) throw new AppError('NOT_FOUND', 'extra.serviceId names no service of the exchange.', { details: { reason: 'invalid_service' } });
    throw err;
  }
  if (contract.agentId !== r.payTo) throw new AppError('VALIDATION_ERROR', 'extra.serviceId names a service of another provider than payTo.', { details: { reason: 'invalid_service' } });
  const id = randomUUID();
  const resource = body.paymentPayload.resource?.url;
  return deps.purchases.request(ctx, id, {
    kind: 'open',
    caller: payer.caller,
    order: {
      id, contract, delegation: payer.delegation, inputErrors: [], input: {}, inputDigest: jsonDigest({}),
      units: undefined, maxPriceCents: undefined, metadata: { x402: { ...(resource !== undefined && { resource }) } },
      x402: { amountCents: Number(r.amount), nonce: body.paymentPayload.payload.nonce, timeoutSeconds: r.maxTimeoutSeconds },
    },
  });
}

const USED: X402Problem = { reason: 'nonce_already_used', message: 'This payment\'s nonce was used already: sign a new payment.' };

/** A refusal of the exchange as an x402 reason: the one its details name, else its code in x402's lower case. */
function problemOf(err: AppError, fallback: string): X402Problem {
  const entry = err.entries[0];
  const named = (entry?.details as { reason?: unknown } | undefined)?.reason;
  const reason = typeof named === 'string' ? named : entry ? entry.code.toLowerCase() : fallback;
  return { reason, message: entry?.message ?? err.message };
}

const asCaller = (p: { agentId: string; accountId: string; isOwner: boolean; status: Caller['status'] }): Caller => ({ agentId: p.agentId, accountId: p.accountId, isOwner: p.isOwner, status: p.status });

/** A verdict reached without a change: recorded under the request's key when it has one (D5.5). */
function verdict<T>(ctx: HandlerContext, deps: TransactionDeps, data: T): Promise<EffectReply<T>> {
  return ctx.keyed ? ctx.effect(deps.tx, async () => ({ data })) : Promise.resolve(groupCommitted(ctx, { data }));
}

/** The x402 answer of a step the purchase's runner made (and recorded under the request's key). */
function afterStep<T>(step: EffectReply<unknown>, data: T): EffectReply<T> {
  return { ...step, status: 200, data } as EffectReply<T>;
}
