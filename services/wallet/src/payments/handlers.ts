import { AppError, type walletOps } from '@aex/contracts';
import type { OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import { StripeProcessor } from './stripe.js';
import { actOnStripeEvent, verifiedStripeEvent } from './stripe-events.js';

type Ops = typeof walletOps;

/**
 * POST /v1/payments/stripe/webhook (D13.7): no bearer; the signature is the authentication. 404 on
 * an exchange whose payments do not go through Stripe.
 */
export const stripeWebhook = (deps: WalletDeps): OperationHandler<Ops['stripeWebhook']> => async ({ body }, ctx) => {
  if (!(deps.payments instanceof StripeProcessor)) throw new AppError('NOT_FOUND', 'This exchange takes no Stripe events: its payments do not go through Stripe.');
  const event = verifiedStripeEvent(deps.payments, body.payload, body.signature);
  return ctx.effect(deps.tx, async (trx, work) => ({ data: { received: true as const, effect: await actOnStripeEvent(deps, trx, work, event) } }));
};

/** The longest period one reconciliation covers: Stripe lists a month's payments in a few pages. */
const MAX_PERIOD_MS = 31 * 86_400_000;

/**
 * GET /admin/v1/payments/reconciliation (D13.7, operator): for [from, to), the fundings and payouts
 * the processor's own records hold against the ledger's — by id and amount, each found on one side
 * only named. A funding paid at Stripe moments ago may still be on its way here (its webhook, or the
 * reconciliation pass within minutes).
 */
export const reconcilePayments = (deps: WalletDeps): OperationHandler<Ops['reconcilePayments']> => async ({ query }) => {
  const from = new Date(query.from);
  const to = new Date(query.to);
  if (!(to.getTime() > from.getTime()) || to.getTime() - from.getTime() > MAX_PERIOD_MS) {
    throw new AppError('VALIDATION_ERROR', 'The period runs from `from` to a later `to`, at most 31 days.', { field: '/query/to' });
  }
  const payments = deps.payments;
  if (!payments) throw new AppError('PAYMENTS_NOT_CONFIGURED', 'No payment processor is configured on this exchange.');
  if (!payments.paymentsBetween) throw new AppError('INVALID_STATE', `${payments.name} keeps no payment records of its own to reconcile against.`, { details: { status: 'not_needed' } });
  const [processor, fundings, payouts] = await Promise.all([
    payments.paymentsBetween(from, to),
    deps.db.selectFrom('fundingSessions').select(['id', 'amountCents']).where('provider', '=', payments.name).where('status', '=', 'paid').where('createdAt', '>=', from).where('createdAt', '<', to).execute(),
    deps.db.selectFrom('payouts').select(['id', 'amountCents']).where('provider', '=', payments.name).where('createdAt', '>=', from).where('createdAt', '<', to).execute(),
  ]);
  const ledger = { fundings: fundings.map((f) => ({ id: f.id, amountCents: Number(f.amountCents) })), payouts: payouts.map((p) => ({ id: p.id, amountCents: Number(p.amountCents) })) };
  type Item = { id: string; amountCents: number };
  const onlyIn = (a: Item[], b: Item[], kind: 'funding' | 'payout') => {
    const other = new Map(b.map((x) => [x.id, x.amountCents]));
    return a.filter((x) => other.get(x.id) !== x.amountCents).map((x) => ({ kind, ...x }));
  };
  const side = (s: { fundings: Item[]; payouts: Item[] }) => ({
    paidInCents: s.fundings.reduce((n, f) => n + f.amountCents, 0), paidOutCents: s.payouts.reduce((n, p) => n + p.amountCents, 0),
    fundings: s.fundings.length, payouts: s.payouts.length,
  });
  const onlyAtProcessor = [...onlyIn(processor.fundings, ledger.fundings, 'funding'), ...onlyIn(processor.payouts, ledger.payouts, 'payout')];
  const onlyInLedger = [...onlyIn(ledger.fundings, processor.fundings, 'funding'), ...onlyIn(ledger.payouts, processor.payouts, 'payout')];
  return {
    data: {
      ok: onlyAtProcessor.length === 0 && onlyInLedger.length === 0, provider: payments.name, from: from.toISOString(), to: to.toISOString(),
      processor: side(processor), ledger: side(ledger), onlyAtProcessor, onlyInLedger,
    },
  };
};
