import { AgentCard, canonicalizeAgentCard } from '@a2a-js/sdk';
import { AppError, canonicalJson, exchangeDidDocument as didDocumentOf, type transactionOps } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import { isTerminal } from '../domain/state-machine.js';
import { visibleTransaction } from '../purchases/handlers.js';

type Ops = typeof transactionOps;

/**
 * GET /v1/transactions/{id}/receipt (D18.3): the parties only (404 to anyone else); 409 while the
 * purchase has not ended; 404 for one that ended before any money was held (it moved nothing).
 */
export const getReceipt = (deps: TransactionDeps): OperationHandler<Ops['getReceipt']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const t = await visibleTransaction(deps, caller.agentId, path.transactionId);
  const r = await deps.db.selectFrom('receipts').select(['jws', 'claims']).where('transactionId', '=', t.id).executeTakeFirst();
  if (r) return { data: { receipt: r.jws, claims: r.claims } };
  if (!isTerminal(t.status) || t.endingStatus !== null) {
    throw new AppError('INVALID_STATE', 'This purchase has not ended yet: its receipt is made when it does.', { details: { status: t.status, ...(t.endingStatus ? { ending: t.endingStatus } : {}) } });
  }
  throw new AppError('NOT_FOUND', 'This purchase ended before any money was held for it, so it has no receipt.', { details: { status: t.status } });
};

/** D18.1: the exchange's receipt keys (public), the current one first. */
export const receiptKeys = (deps: TransactionDeps): OperationHandler<Ops['receiptKeys']> => async () => ({ data: await deps.keyRing.keys() });

/** D18.1: the exchange's DID document (`did:web:{domain}`), listing the same keys. */
export const exchangeDidDocument = (deps: TransactionDeps): OperationHandler<Ops['exchangeDidDocument']> => async () =>
  ({ data: didDocumentOf(deps.config.PUBLIC_BASE_URL, (await deps.keyRing.keys()).keys) });

/** D18.4 (operator): a new receipt key from now on; receipts signed with the retired ones keep verifying. */
export const rotateReceiptKey = (deps: TransactionDeps): OperationHandler<Ops['rotateReceiptKey']> => async (_input, ctx) =>
  ctx.effect(deps.tx, async (trx, work) => ({ data: await deps.keyRing.rotate(trx, work, deps.now()) }));

/**
 * D21.1 (internal): signs an agent card the gateway serves with the current receipt key, over its
 * RFC 8785 form without `signatures` — what D21.1 and a verifier with any RFC 8785 library check.
 * The A2A JS SDK canonicalizes a card further, as it signs and verifies the card decoded by its
 * codec: `canonicalizeAgentCard` drops every empty object, list and string (a security requirement
 * without scopes goes), and re-reading a decoded card loses its security schemes. When that form
 * differs, a second signature covers it, so that the SDK's verifier accepts the card too.
 */
export const signAgentCard = (deps: TransactionDeps): OperationHandler<Ops['signAgentCard']> => async ({ body }) => {
  const { signatures: _ignored, ...card } = body.card as Record<string, unknown>;
  const forms = [canonicalJson(card)];
  const sdkForm = canonicalizeAgentCard(AgentCard.fromJSON(card));
  if (sdkForm !== forms[0]) forms.push(sdkForm);
  return { data: await deps.keyRing.signCard(forms, `${deps.config.PUBLIC_BASE_URL}/.well-known/jwks.json`) };
};
