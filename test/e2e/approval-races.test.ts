import { describe, expect } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import type { TransactionView } from '@aex/contracts';
import { exchangeTest } from './fixtures.js';
import { funded, INPUT, ledgerOf, wallet, waitForStatus, type Party } from './transaction-kit.js';

// D9.14 for the owner's approval (D10.3), through the gateway against the real services: an approve
// sent at the same moment as the buyer's cancel or the owner's denial, many rounds, several rounds
// at once. Exactly one of the two makes its move; the other answers 409 INVALID_STATE with the
// status it found, whatever the timing — an approval never answers 2xx with a purchase the other
// request ended — and the buyer's money moves once: nothing, or one hold and its return.

const ROUNDS = 36;
const AT_ONCE = 6;
const it = exchangeTest({ SAGA_WAIT_MS: '5000', RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000' }).extend('buyer', async ({ exchange }) => {
  const b = await funded(exchange, 10 * 1000);
  unwrap(await b.owner.client.setAgentDelegation(b.agentId, { requireHumanApprovalAboveCents: 500 }));
  return b;
});

type Rival = 'cancel' | 'deny';
interface Round { id: string; approve: Outcome<TransactionView>; rival: Outcome<TransactionView> }

/**
 * How long after the approve its rival is sent, round by round (negative: the approve after the
 * rival). Sent at once, the rival nearly always comes first (an approve asks identity for the rules
 * in force before its step); a few milliseconds later it finds the approval's hold on its way, later
 * still the hold placed. A sleep is the point here: the rounds sweep the timing.
 */
const OFFSETS_MS = [0, -5, 5, 15, 30, 60, 120, 250, 500];

const said = (r: Outcome<TransactionView>) => (r.ok ? `${r.status} ${r.data.status}` : `${r.status} ${r.error.errors[0]?.code} ${JSON.stringify(r.error.errors[0]?.details)}`);
const won = (r: Outcome<TransactionView>) => r.ok && r.status >= 200 && r.status < 300;
const statusRefusal = (r: Outcome<TransactionView>) => !r.ok && r.status === 409 && r.error.errors[0]?.code === 'INVALID_STATE' && typeof r.error.errors[0]?.details?.status === 'string';

const after = async <T>(ms: number, send: () => Promise<T>): Promise<T> => {
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  return send();
};

/** One round: a purchase of 1,000 cents waiting for the owner, then the approve and its rival, `offset` ms apart. */
async function round(buyer: Party, serviceId: string, rival: Rival, offset: number): Promise<Round> {
  const t = unwrap(await buyer.client.createTransaction({ serviceId, input: INPUT }));
  expect(t.status).toBe('awaiting_approval');
  const [approve, other] = await Promise.all([
    after(-offset, () => buyer.owner.client.approve(t.id)),
    after(offset, () => (rival === 'cancel' ? buyer.client.cancel(t.id) : buyer.owner.client.deny(t.id))),
  ]);
  return { id: t.id, approve, rival: other };
}

/** Runs the rounds, AT_ONCE at a time, and checks each: one winner, the other 409 with the status; the money moved once. */
async function race(buyer: Party, serviceId: string, rival: Rival): Promise<void> {
  for (let done = 0; done < ROUNDS; done += AT_ONCE) {
    const rounds = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => round(buyer, serviceId, rival, OFFSETS_MS[(done + i) % OFFSETS_MS.length]!)));
    for (const r of rounds) {
      const label = `${r.id} (approve ${said(r.approve)}, ${rival} ${said(r.rival)})`;
      // A cancel decided after the approval's hold was placed cancels a funded purchase (D9.7): the
      // approve had finished and answered with it held; they did not race.
      const sequential = rival === 'cancel' && won(r.approve) && r.approve.ok && r.approve.data.status === 'funds_held' && won(r.rival);
      if (!sequential) {
        expect([won(r.approve), won(r.rival)].filter(Boolean), label).toHaveLength(1);
        expect(statusRefusal(won(r.approve) ? r.rival : r.approve), label).toBe(true);
      }
      const winner = !sequential && won(r.approve) ? 'approve' : rival;
      const final = await waitForStatus(buyer, r.id, winner === 'approve' ? 'funds_held' : 'cancelled');
      if (winner !== 'approve') expect(final.statusReason, label).toBe(rival === 'deny' ? 'approval_denied' : 'cancelled_by_consumer');
      // The approved purchase is let go, its price returned, so that the buyer's balance tells the money moved once.
      if (winner === 'approve') await waitForStatus(buyer, unwrap(await buyer.client.cancel(r.id)).id, 'cancelled');
      const entries = await ledgerOf(buyer, r.id);
      expect([[], [['fund_hold', -1000], ['fund_return', 1000]]], label).toContainEqual(entries);
      if (winner === 'approve' || sequential) expect(entries, label).toHaveLength(2);
    }
  }
  expect(await wallet(buyer)).toMatchObject({ balanceCents: 10 * 1000, heldCents: 0 });
}

describe('an approval racing a cancel or a denial: exactly one makes its move, the other answers 409 (D9.14, D10.3)', () => {
  it('approve against the owner\'s deny, many rounds at once: one wins, the other is 409 INVALID_STATE with the status, money once', async ({ buyer, service }) => {
    await race(buyer, service, 'deny');
  });

  it('approve against the buyer\'s cancel, many rounds at once: one wins, the other is 409 INVALID_STATE with the status (unless the approval had finished, its price held), money once', async ({ buyer, service }) => {
    await race(buyer, service, 'cancel');
  });
});
