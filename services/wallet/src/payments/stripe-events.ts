import { AppError } from '@aex/contracts';
import { startPeriodic, type Stoppable, type UnitOfWork } from '@aex/platform';
import type { Transaction } from 'kysely';
import type Stripe from 'stripe';
import type { WalletDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { creditFunding } from '../wallets/fundings.js';
import { checkoutState, type CheckoutState, type StripeProcessor } from './stripe.js';

type Trx = Transaction<Database>;

/** What a Stripe event did. */
export type StripeEventEffect = 'credited' | 'closed' | 'repeat' | 'ignored';

/** The Checkout Session events a funding follows (D13.7); others are acknowledged and left alone. */
const SESSION_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded', 'checkout.session.async_payment_failed', 'checkout.session.expired']);

/**
 * The event Stripe signed (D13.7), from the request's exact bytes and its `Stripe-Signature`: 400,
 * nothing recorded, when the signature is missing, wrong or older than the tolerance.
 */
export function verifiedStripeEvent(stripe: StripeProcessor, payload: string, signature: string): Stripe.Event {
  try {
    return stripe.verifyEvent(payload, signature);
  } catch (err) {
    // The SDK's first sentence says what did not match; the rest is advice for integrators.
    const why = (err as Error).message.split(/\.\s|\n/)[0]!.trim().replace(/\.$/, '');
    throw new AppError('VALIDATION_ERROR', `The Stripe event is refused: ${why}. It must carry a Stripe-Signature of its exact body, made with this endpoint's signing secret within the last 5 minutes.`, { field: '/headers/stripe-signature' });
  }
}

/**
 * Acts on a verified Stripe event once, by its id, in `trx`. A paid session credits its funding
 * (`fund`, exactly once whatever else confirms it); an expired or failed one is closed, never
 * credited. Refused with 400, nothing changed and nothing recorded, when the event names a session
 * that is not one of ours or whose amount is not the funding's. A repeat of an event already acted
 * on changes nothing and is acknowledged, as Stripe expects (else it delivers it again for days).
 */
export async function actOnStripeEvent(deps: WalletDeps, trx: Trx, work: UnitOfWork, event: Stripe.Event): Promise<StripeEventEffect> {
  const first = await trx.insertInto('stripeEvents').values({ id: event.id, type: event.type }).onConflict((oc) => oc.column('id').doNothing()).returning('id').executeTakeFirst();
  if (!first) return 'repeat';
  if (!SESSION_EVENTS.has(event.type)) return 'ignored';
  const session = checkoutState(event.data.object as Stripe.Checkout.Session);
  const closing = event.type === 'checkout.session.expired' || event.type === 'checkout.session.async_payment_failed';
  return settleFunding(deps, trx, work, session, closing);
}

/**
 * Brings a funding in line with its Checkout Session, in `trx`: credited once when paid, closed when
 * it expired or its payment failed (`closing`), left pending otherwise (an async payment on its way).
 */
async function settleFunding(deps: WalletDeps, trx: Trx, work: UnitOfWork, session: CheckoutState, closing: boolean): Promise<StripeEventEffect> {
  const funding = await trx.selectFrom('fundingSessions').selectAll().where('id', '=', session.sessionId).where('provider', '=', 'stripe').forUpdate().executeTakeFirst();
  if (!funding) throw new AppError('VALIDATION_ERROR', `Checkout session ${session.sessionId} is not a funding of this exchange.`, { field: '/body/data/object/id' });
  if (session.amountCents !== Number(funding.amountCents) || session.currency !== 'usd' || (session.walletId !== null && session.walletId !== funding.walletId)) {
    throw new AppError('VALIDATION_ERROR', `Checkout session ${session.sessionId} does not match its funding (${funding.amountCents} cents).`, { field: '/body/data/object/amount_total' });
  }
  if (funding.status !== 'pending') return 'repeat';
  const now = deps.now();
  if (session.state === 'paid') {
    const wallet = await trx.selectFrom('wallets').select('agentId').where('id', '=', funding.walletId).executeTakeFirstOrThrow();
    await creditFunding(trx, work, { agentId: wallet.agentId!, walletId: funding.walletId, amountCents: Number(funding.amountCents), sessionId: funding.id, provider: funding.provider }, now);
    await trx.updateTable('fundingSessions').set({ status: 'paid', paidAt: now }).where('id', '=', funding.id).execute();
    return 'credited';
  }
  if (closing || session.state === 'expired') {
    await trx.updateTable('fundingSessions').set({ status: 'expired' }).where('id', '=', funding.id).execute();
    return 'closed';
  }
  return 'ignored';
}

/**
 * A reconciliation pass (D13.7: a lost webhook loses nothing): every Stripe funding still pending
 * that was made more than `olderThanMs` ago is asked of Stripe and brought in line — credited once if
 * paid, closed if expired. Returns what it did, by session.
 */
export async function reconcileStripeFundings(deps: WalletDeps, stripe: StripeProcessor, olderThanMs: number): Promise<Record<string, StripeEventEffect>> {
  const before = new Date(deps.now().getTime() - olderThanMs);
  const pending = await deps.db.selectFrom('fundingSessions').select('id').where('provider', '=', 'stripe').where('status', '=', 'pending').where('createdAt', '<', before).orderBy('createdAt').limit(100).execute();
  const done: Record<string, StripeEventEffect> = {};
  for (const { id } of pending) {
    const session = await stripe.checkout(id);
    done[id] = await deps.tx.run((trx, work) => settleFunding(deps, trx, work, session, false));
  }
  return done;
}

/** How often the reconciliation pass runs, and how old a pending funding must be for it to ask Stripe. */
export const RECONCILE_EVERY_MS = 60_000;
export const RECONCILE_AFTER_MS = 10 * 60_000;

/** Runs `reconcileStripeFundings` every minute until stopped (safe on every replica: each funding is locked). */
export function startStripeReconciliation(deps: WalletDeps, stripe: StripeProcessor): Stoppable {
  return startPeriodic(deps.logger, 'Stripe reconciliation', RECONCILE_EVERY_MS, async () => {
    const done = await reconcileStripeFundings(deps, stripe, RECONCILE_AFTER_MS);
    const credited = Object.values(done).filter((e) => e === 'credited').length;
    if (credited > 0) deps.logger.warn({ credited }, 'Stripe fundings credited by reconciliation: their webhooks did not arrive');
  });
}
