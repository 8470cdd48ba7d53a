import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import { AppError, events, pagination, type LedgerEntryView, type Principal, type WalletView, type walletOps } from '@aex/contracts';
import { groupCommitted, requireAgent, type OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import type { LedgerEntryRow, WalletRow } from '../db/schema.js';
import { creditFunding } from './fundings.js';
import { moveMoney } from './movements.js';

type Ops = typeof walletOps;

export function walletView(w: WalletRow): WalletView {
  return {
    id: w.id,
    agentId: w.agentId!,
    balanceCents: w.balanceCents,
    heldCents: w.heldCents,
    availableCents: w.balanceCents - w.heldCents,
    lifetimeEarnedCents: w.lifetimeEarnedCents,
    lifetimeSpentCents: w.lifetimeSpentCents,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
  };
}

function entryView(e: Selectable<LedgerEntryRow>): LedgerEntryView {
  return {
    id: e.id,
    walletId: e.walletId,
    transactionId: e.transactionId,
    txType: e.txType,
    amountCents: e.amountCents,
    balanceAfterCents: e.balanceAfterCents,
    availableAfterCents: e.availableAfterCents,
    description: e.description,
    createdAt: e.createdAt.toISOString(),
  };
}

/**
 * Who may use a wallet (D13.1, D13.6, D6.8): its agent, the owner agent of its account, and for a
 * child's wallet its parent. None of it ever changes once the wallet exists (one wallet per agent,
 * none deleted; an agent keeps its account and its parent), so a replica keeps it for the wallets it
 * has funded: a funding then reads nothing before its batch, which itself refuses a wallet
 * closed since (fundings.ts).
 */
export interface WalletAccess { id: string; agentId: string; accountId: string | null; parentAgentId: string | null }

/** D13.1 / D13.6: the agent's own wallet, or any of the account's for its owner agent; (EXT, D6.8) a child's for its parent. */
const mayUse = (w: WalletAccess, caller: Principal): boolean =>
  w.agentId === caller.agentId || (w.accountId === caller.accountId && (caller.isOwner || w.parentAgentId === caller.agentId));

const noSuchWallet = () => new AppError('NOT_FOUND', 'No such wallet.');

/** The wallet of `agentId` if the caller may use it; others see 404. */
async function accessibleWallet(deps: WalletDeps, caller: Principal, agentId: string): Promise<WalletRow & { parentAgentId: string | null }> {
  const w = await deps.db.selectFrom('wallets as w').leftJoin('wallets as p', 'p.id', 'w.parentWalletId')
    .selectAll('w').select('p.agentId as parentAgentId').where('w.agentId', '=', agentId).executeTakeFirst();
  if (!w?.agentId || !mayUse({ ...w, agentId: w.agentId }, caller)) throw noSuchWallet();
  return w;
}

const closedWallet = () => new AppError('INVALID_STATE', 'This child agent has expired: its wallet is closed and its funds returned to its parent.', { details: { status: 'closed' } });

/** D6.8: an expired child's wallet takes no new money and pays none out; its funds went to the parent. */
function requireOpen(w: WalletRow): void {
  if (w.closedAt) throw closedWallet();
}

/** The caller's usable wallet (404 otherwise), refused when it is closed (409). */
async function openWallet(deps: WalletDeps, caller: Principal, agentId: string): Promise<WalletRow & { parentAgentId: string | null }> {
  const w = await accessibleWallet(deps, caller, agentId);
  requireOpen(w);
  return w;
}

function requirePayments(deps: WalletDeps) {
  if (!deps.payments) throw new AppError('PAYMENTS_NOT_CONFIGURED', 'No payment processor is configured on this exchange.');
  return deps.payments;
}

export const getWallet = (deps: WalletDeps): OperationHandler<Ops['getWallet']> => async ({ path }, ctx) => ({
  data: walletView(await accessibleWallet(deps, requireAgent(ctx), path.agentId)),
});

/**
 * The wallet a funding goes to: from what this replica keeps (a wallet known to be closed since is
 * refused by the funding's batch), else read and checked to be open, then kept.
 */
async function fundableWallet(deps: WalletDeps, caller: Principal, agentId: string): Promise<WalletAccess> {
  const known = deps.access.get(agentId);
  if (known) {
    if (!mayUse(known, caller)) throw noSuchWallet();
    return known;
  }
  const w = await openWallet(deps, caller, agentId);
  const access: WalletAccess = { id: w.id, agentId, accountId: w.accountId, parentAgentId: w.parentAgentId };
  deps.access.set(agentId, access);
  return access;
}

/** POST /v1/wallets/{agentId}/fund (D13.4): sandbox confirms at once. */
export const fund = (deps: WalletDeps): OperationHandler<Ops['fund']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  // Without a key, from what this replica knows of the wallet (its batch refuses one closed since);
  // with a key (D5.5: its effect is written on its own), the wallet read and checked in full.
  const known = ctx.keyed ? undefined : await fundableWallet(deps, caller, path.agentId);
  const read = known ? undefined : await openWallet(deps, caller, path.agentId);
  const payments = requirePayments(deps);
  const session = await payments.createCheckout(body.amountCents, { operationId: `fund:${randomUUID()}`, walletId: (known ?? read)!.id, agentId: path.agentId });
  // The processor's own page (Stripe Checkout), or the sandbox's page of the session it confirmed.
  const checkoutUrl = session.url ?? `${deps.config.PUBLIC_BASE_URL}/sandbox/checkout/${session.sessionId}`;
  if (known && session.confirmed) {
    // No key to record with the effect: written with the fundings arriving alongside (fundings.ts).
    const key = ctx.operationRecord?.row();
    const newBalanceCents = await deps.fundings.submit({ agentId: path.agentId, walletId: known.id, amountCents: body.amountCents, sessionId: session.sessionId, provider: payments.name, ...(key && { key }) });
    if (newBalanceCents === null) throw closedWallet();
    ctx.operationRecord?.recorded();
    return groupCommitted(ctx, { data: { checkoutUrl, sessionId: session.sessionId, funded: true, amountCents: body.amountCents, newBalanceCents } });
  }
  // A session the processor has yet to confirm is recorded on the wallet as it is now.
  const wallet = read ?? (await openWallet(deps, caller, path.agentId));
  const now = deps.now();
  return ctx.effect(deps.tx, async (trx, work) => {
    // The movement (which locks the wallet FOR UPDATE) comes before the session row: inserting the
    // row first would take a key-share lock on the wallet and deadlock concurrent fundings.
    if (session.confirmed) await creditFunding(trx, work, { agentId: path.agentId, walletId: wallet.id, amountCents: body.amountCents, sessionId: session.sessionId, provider: payments.name }, now);
    await trx.insertInto('fundingSessions').values({ id: session.sessionId, walletId: wallet.id, provider: payments.name, amountCents: body.amountCents, status: session.confirmed ? 'paid' : 'pending', createdAt: now, paidAt: session.confirmed ? now : null }).execute();
    const newBalanceCents = session.confirmed
      ? (await trx.selectFrom('wallets').select('balanceCents').where('id', '=', wallet.id).executeTakeFirstOrThrow()).balanceCents
      : null;
    return {
      data: {
        checkoutUrl,
        sessionId: session.sessionId,
        funded: session.confirmed,
        amountCents: body.amountCents,
        newBalanceCents,
      },
    };
  });
};

/**
 * POST /v1/wallets/{agentId}/withdraw (D13.5): at most the available balance. Through a processor
 * that pays a linked account (Stripe, D13.7): to the account's linked one (409 until it is linked),
 * and only under an Idempotency-Key, from which the processor's own key derives — a retry after a
 * crash between its answer and our commit then finds the same payout there, and it is paid once.
 */
export const withdraw = (deps: WalletDeps): OperationHandler<Ops['withdraw']> => async ({ path, body }, ctx) => {
  const wallet = await openWallet(deps, requireAgent(ctx), path.agentId);
  const payments = requirePayments(deps);
  let destination: string | undefined;
  if (payments.linkPayoutAccount) {
    if (!ctx.keyed) {
      throw new AppError('VALIDATION_ERROR', `A withdrawal through ${payments.name} needs an Idempotency-Key header: a retry with the same key after a failure then pays once.`, { field: '/headers/idempotency-key' });
    }
    const linked = await deps.db.selectFrom('payoutAccounts').select('externalId').where('accountId', '=', wallet.accountId!).where('provider', '=', payments.name).executeTakeFirst();
    if (!linked) {
      throw new AppError('INVALID_STATE', `No ${payments.name} account is linked for payouts yet: the account's owner agent links one with POST /v1/accounts/${wallet.accountId}/payouts/link and completes the page it answers.`, { details: { status: 'unlinked' } });
    }
    destination = linked.externalId;
  }
  const now = deps.now();
  const operationId = `payout:${ctx.operationKey ?? randomUUID()}`;
  return ctx.effect(deps.tx, async (trx, work) => {
    // The movement locks the wallet and refuses an overdraft before the processor is asked to pay.
    await moveMoney(trx, { operationId, movements: [{ walletId: wallet.id, txType: 'payout', amountCents: -body.amountCents, description: 'Payout requested' }], now, once: true });
    let payout;
    try {
      payout = await payments.createPayout(body.amountCents, now, { operationId, walletId: wallet.id, destination });
    } catch (err) {
      if (!destination) throw err;
      // Nothing is written: the movement goes with the transaction.
      throw new AppError('INVALID_STATE', `${payments.name} refused the payout: ${(err as Error).message}`, { details: { status: 'refused_by_processor' } });
    }
    await trx.insertInto('payouts').values({ id: payout.payoutId, walletId: wallet.id, provider: payments.name, amountCents: body.amountCents, estimatedArrival: payout.estimatedArrival, createdAt: now }).execute();
    work.enqueue(events.walletPaidOut, { agentId: path.agentId, walletId: wallet.id, amountCents: body.amountCents, payoutId: payout.payoutId }, { now });
    return { data: { payoutId: payout.payoutId, amountCents: body.amountCents, estimatedArrival: payout.estimatedArrival.toISOString() } };
  });
};

/** GET /v1/wallets/{agentId}/payouts: the wallet's payouts, newest first, with the processor's ids. */
export const listPayouts = (deps: WalletDeps): OperationHandler<Ops['listPayouts']> => async ({ path, query }, ctx) => {
  const wallet = await accessibleWallet(deps, requireAgent(ctx), path.agentId);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const [rows, count] = await Promise.all([
    deps.db.selectFrom('payouts').selectAll().where('walletId', '=', wallet.id).orderBy('createdAt', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    deps.db.selectFrom('payouts').select(sql<number>`count(*)::int`.as('n')).where('walletId', '=', wallet.id).executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((p) => ({ payoutId: p.id, provider: p.provider, amountCents: Number(p.amountCents), estimatedArrival: p.estimatedArrival.toISOString(), createdAt: p.createdAt.toISOString() })),
    pagination: pagination(count.n, limit, offset),
  };
};

/**
 * POST /v1/accounts/{accountId}/payouts/link (D13.7): the account's owner agent only (another agent
 * of the account: 403; another account: 404). Links the account's payout account at the processor
 * once, and answers its onboarding page (again, each time asked).
 */
export const linkPayoutAccount = (deps: WalletDeps): OperationHandler<Ops['linkPayoutAccount']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  if (caller.accountId !== path.accountId) throw new AppError('NOT_FOUND', 'No such account.');
  if (!caller.isOwner) throw new AppError('FORBIDDEN', 'Only the account\'s owner agent links where its payouts go.');
  const payments = requirePayments(deps);
  if (!payments.linkPayoutAccount) throw new AppError('INVALID_STATE', `Payouts through ${payments.name} need no linked account.`, { details: { status: 'not_needed' } });
  const known = await deps.db.selectFrom('payoutAccounts').select('externalId').where('accountId', '=', path.accountId).where('provider', '=', payments.name).executeTakeFirst();
  const link = await payments.linkPayoutAccount(path.accountId, known?.externalId);
  return ctx.effect(deps.tx, async (trx) => {
    await trx.insertInto('payoutAccounts').values({ accountId: path.accountId, provider: payments.name, externalId: link.externalId }).onConflict((oc) => oc.column('accountId').doNothing()).execute();
    return { data: { url: link.url, expiresAt: link.expiresAt.toISOString(), stripeAccountId: link.externalId } };
  });
};

/** GET /v1/wallets/{agentId}/transactions: the ledger, oldest first, paginated. */
export const listLedger = (deps: WalletDeps): OperationHandler<Ops['listLedger']> => async ({ path, query }, ctx) => {
  const wallet = await accessibleWallet(deps, requireAgent(ctx), path.agentId);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const [rows, count] = await Promise.all([
    deps.db.selectFrom('ledgerEntries').selectAll().where('walletId', '=', wallet.id).orderBy('seq').limit(limit).offset(offset).execute(),
    deps.db.selectFrom('ledgerEntries').select(sql<number>`count(*)::int`.as('n')).where('walletId', '=', wallet.id).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(entryView), pagination: pagination(count.n, limit, offset) };
};

/** GET /v1/wallets/{agentId}/fundings: the wallet's funding sessions, newest first, with their state. */
export const listFundings = (deps: WalletDeps): OperationHandler<Ops['listFundings']> => async ({ path, query }, ctx) => {
  const wallet = await accessibleWallet(deps, requireAgent(ctx), path.agentId);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const [rows, count] = await Promise.all([
    deps.db.selectFrom('fundingSessions').selectAll().where('walletId', '=', wallet.id).orderBy('createdAt', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    deps.db.selectFrom('fundingSessions').select(sql<number>`count(*)::int`.as('n')).where('walletId', '=', wallet.id).executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((s) => ({ sessionId: s.id, provider: s.provider, status: s.status, amountCents: Number(s.amountCents), createdAt: s.createdAt.toISOString(), paidAt: s.paidAt?.toISOString() ?? null })),
    pagination: pagination(count.n, limit, offset),
  };
};

/**
 * GET /sandbox/checkout/{sessionId}: the page a `checkoutUrl` points at. The sandbox has already
 * confirmed the payment, so it shows the paid session; it names no wallet or agent.
 */
export const getCheckout = (deps: WalletDeps): OperationHandler<Ops['getCheckout']> => async ({ path }) => {
  const s = await deps.db.selectFrom('fundingSessions').selectAll().where('id', '=', path.sessionId).executeTakeFirst();
  if (!s) throw new AppError('NOT_FOUND', 'No such checkout session.');
  return {
    data: { sessionId: s.id, provider: s.provider, status: s.status, amountCents: s.amountCents, createdAt: s.createdAt.toISOString(), paidAt: s.paidAt?.toISOString() ?? null },
  };
};
