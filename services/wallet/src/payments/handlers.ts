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
  return ctx.effect(deps.db, async (trx, work) => ({ data: { received: true as const, effect: await actOnStripeEvent(deps, trx, work, event) } }));
};
