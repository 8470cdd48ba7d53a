import { describe, expect, it } from 'vitest';
import type { HoldRow } from '../src/db/schema.js';
import { childBudgetAggregate, decideChildBudget, type ChildBudget } from '../src/wallets/children.js';
import { decideHoldStep, type HoldState } from '../src/wallets/holds.js';
import type { LockedWallet } from '../src/wallets/movements.js';

// The hold's and the child budget's decisions as the runner takes them (pure: no I/O), on the state
// presumed, remembered or locked: what each writes, and the D6.8 returns decided on wallets locked.

const now = new Date('2026-11-28T00:00:00Z');
const t = '00000000-0000-4000-8000-000000000001';
const held: HoldRow = { transactionId: t, walletId: 'child', amountCents: 300, attempt: 1, status: 'held', refusal: null, providerWalletId: null, feeCents: null, refundCents: 0, session: false, capturedCents: 0, capturedFeeCents: 0, createdAt: now, closedAt: null };
const wallet = (id: string, over: Partial<LockedWallet> = {}): LockedWallet => ({ id, agentId: `agent-${id}`, balanceCents: 1000, heldCents: 0, closed: false, parentWalletId: null, ...over });

describe('the hold’s step (decideHoldStep)', () => {
  it('places a transaction’s first hold on the state presumed, the funds presumed to be the price', () => {
    const decision = decideHoldStep({ transactionId: t, hold: undefined, presumed: true }, { kind: 'hold', consumerAgentId: 'a', attempt: 1, amountCents: 300 }, { consumer: { id: 'w', availableCents: 300 } }, now);
    expect(decision).toMatchObject({ kind: 'changed', effects: ['answer'], changes: { decision: 'place', operationId: `hold:${t}`, hold: { status: 'held', walletId: 'w' }, movements: [{ walletId: 'w', txType: 'fund_hold', amountCents: -300 }] } });
  });

  it('leaves any other command on a presumed state to be decided on what is read', () => {
    for (const command of [{ kind: 'return' as const }, { kind: 'settle' as const, providerAgentId: 'p', amountCents: 300, feeCents: 15, refundCents: 0 }]) {
      expect(decideHoldStep({ transactionId: t, hold: undefined, presumed: true }, command, {}, now)).toEqual({ kind: 'unchanged' });
    }
  });

  it('answers a repeated command with the hold as it is, writing nothing of it', () => {
    const decision = decideHoldStep({ transactionId: t, hold: held }, { kind: 'hold', consumerAgentId: 'a', attempt: 1, amountCents: 300 }, { consumer: { id: 'child', availableCents: 300 } }, now);
    expect(decision).toMatchObject({ kind: 'changed', effects: ['answer'], changes: { decision: 'answer', hold: held, movements: [] } });
  });

  it('returns a hold of a closed child’s wallet with what it frees returned to the parent, on the wallets locked (D6.8)', () => {
    const wallets = new Map([['child', wallet('child', { balanceCents: 300, heldCents: 300, closed: true, parentWalletId: 'parent' })], ['parent', wallet('parent')]]);
    const decision = decideHoldStep({ transactionId: t, hold: held } satisfies HoldState, { kind: 'return' }, { wallets }, now);
    expect(decision.kind === 'changed' && decision.changes.movements.map((m) => [m.walletId, m.txType, m.amountCents, m.operationId ?? null])).toEqual([
      ['child', 'fund_return', 300, null],
      ['child', 'parent_return', -300, `return:${t}:return:child`],
      ['parent', 'parent_return', 300, `return:${t}:return:child`],
    ]);
  });

  it('settles on the hold remembered without a return: the wallets were not read, the write checks them', () => {
    const decision = decideHoldStep({ transactionId: t, hold: { ...held, walletId: 'c' } }, { kind: 'settle', providerAgentId: 'p', amountCents: 300, feeCents: 15, refundCents: 0 }, { parties: { consumer: 'c', provider: 'p', platform: 'f' } }, now);
    expect(decision.kind === 'changed' && decision.changes.movements.map((m) => [m.walletId, m.txType, m.amountCents])).toEqual([
      ['c', 'fund_release', 300], ['c', 'settlement_out', -300], ['p', 'settlement_in', 300], ['p', 'platform_fee', -15], ['f', 'platform_fee', 15],
    ]);
  });
});

describe('the child budget’s step (decideChildBudget)', () => {
  const none: ChildBudget = { childAgentId: 'kid', allocation: undefined, wallet: undefined };
  const allocate = { kind: 'allocate' as const, parentAgentId: 'mum', accountId: 'acc', budgetCents: 600, walletId: 'kid-wallet' };
  const parent = { ...wallet('parent'), kind: 'agent' as const, agentId: 'mum', accountId: 'acc', lifetimeEarnedCents: 0, lifetimeSpentCents: 0, closedAt: null, createdAt: now, updatedAt: now };

  it('funds a spawn the parent can pay: the child’s wallet opened with its budget moved from the parent’s', () => {
    const decision = decideChildBudget(none, allocate, { parent }, now);
    expect(decision).toMatchObject({ kind: 'changed', effects: ['answer'], changes: {
      decision: 'fund', allocation: { status: 'funded', availableCents: 1000 }, opens: { id: 'kid-wallet', parentWalletId: 'parent' },
      movements: [{ walletId: 'parent', txType: 'parent_allocation', amountCents: -600 }, { walletId: 'kid-wallet', txType: 'parent_allocation', amountCents: 600 }],
    } });
  });

  it('refuses a spawn beyond the parent’s available balance, or of a parent without a wallet', () => {
    expect(decideChildBudget(none, { ...allocate, budgetCents: 1001 }, { parent }, now)).toMatchObject({ kind: 'changed', changes: { decision: 'refuse', allocation: { status: 'refused', refusal: 'insufficient_funds' } } });
    expect(decideChildBudget(none, allocate, { parent: null }, now)).toMatchObject({ kind: 'changed', changes: { decision: 'refuse', allocation: { refusal: 'no_wallet' } } });
  });

  it('closes a child\'s wallet returning its available balance, once (decided on the wallets locked: the aggregate is always locked)', () => {
    const open: ChildBudget = { childAgentId: 'kid', allocation: undefined, wallet: { id: 'kid-wallet', parentWalletId: 'parent', closed: false } };
    expect(childBudgetAggregate().alwaysLocked).toBe(true);
    const wallets = new Map([['kid-wallet', wallet('kid-wallet', { balanceCents: 800, heldCents: 300, parentWalletId: 'parent' })], ['parent', wallet('parent')]]);
    expect(decideChildBudget({ ...open }, { kind: 'close' }, { wallets }, now)).toMatchObject({ kind: 'changed', effects: [], changes: {
      decision: 'close', wallet: { closed: true }, movements: [{ walletId: 'kid-wallet', txType: 'parent_return', amountCents: -500 }, { walletId: 'parent', txType: 'parent_return', amountCents: 500 }],
    } });
    expect(decideChildBudget({ ...open, wallet: { ...open.wallet!, closed: true } }, { kind: 'close' }, {}, now)).toEqual({ kind: 'unchanged' });
  });
});
