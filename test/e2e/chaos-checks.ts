import type pg from 'pg';
import { TERMINAL_STATUSES, type TransactionStatus } from '@aex/contracts';
import type { Ledger } from './chaos-cast.js';
import type { Traffic } from './chaos-traffic.js';

// What the chaos test checks once its load has drained, read straight from the exchange's database
// (the services' own schemas): money conserved, every wallet's chain of entries, every purchase's
// entries as its status says, every key with one outcome, nothing stuck. Each check returns what it
// found wrong (an empty list when all is well), so that a run reports every problem at once.

/** D13.2: the entry types that move what is held; every other type moves the balance. */
const HELD_TYPES = `('fund_hold', 'fund_return', 'fund_release')`;

/**
 * D13.3: the sum of every wallet's balance, the platform's included, equals what was funded minus what
 * was paid out — as the clients were told (one success per key), and as the processor's records say.
 */
export async function conservation(db: pg.Client, ledgers: Ledger[]): Promise<string[]> {
  const funded = ledgers.reduce((s, l) => s + l.fundedCents, 0);
  const paidOut = ledgers.reduce((s, l) => s + l.paidOutCents, 0);
  const { rows: [r] } = await db.query<{ balances: string; sessions: string; payouts: string }>(`
    select (select coalesce(sum(balance_cents), 0) from wallet.wallets)::text as balances,
           (select coalesce(sum(amount_cents), 0) from wallet.funding_sessions where status = 'paid')::text as sessions,
           (select coalesce(sum(amount_cents), 0) from wallet.payouts)::text as payouts`);
  const found: string[] = [];
  if (Number(r!.balances) !== funded - paidOut) found.push(`wallets hold ${r!.balances} cents; the clients funded ${funded} and were paid out ${paidOut}`);
  if (Number(r!.sessions) !== funded) found.push(`paid funding sessions total ${r!.sessions} cents; the clients' keyed fundings ${funded}`);
  if (Number(r!.payouts) !== paidOut) found.push(`payouts total ${r!.payouts} cents; the clients' keyed withdrawals ${paidOut}`);
  return found;
}

/**
 * D13.2: every wallet's entries, in order, form a chain: each entry's balance and available balance
 * after it are the previous ones moved by the entry, starting from nothing, and the last are the
 * wallet's balance and available balance now.
 */
export async function walletChains(db: pg.Client): Promise<{ wallets: number; broken: string[] }> {
  const { rows } = await db.query<{ wallet_id: string; seq: string; why: string }>(`
    with e as (
      select wallet_id, seq, tx_type, amount_cents, balance_after_cents, available_after_cents,
             coalesce(lag(balance_after_cents) over w, 0) as prev_balance,
             coalesce(lag(available_after_cents) over w, 0) as prev_available,
             row_number() over (partition by wallet_id order by seq desc) as from_end
      from wallet.ledger_entries window w as (partition by wallet_id order by seq)
    )
    select e.wallet_id, e.seq::text, 'entry does not follow the one before' as why from e
     where e.balance_after_cents <> e.prev_balance + case when e.tx_type in ${HELD_TYPES} then 0 else e.amount_cents end
        or e.available_after_cents <> e.prev_available + e.amount_cents
    union all
    select w.id, coalesce(e.seq, 0)::text, 'last entry is not the wallet' from wallet.wallets w left join e on e.wallet_id = w.id and e.from_end = 1
     where coalesce(e.balance_after_cents, 0) <> w.balance_cents or coalesce(e.available_after_cents, 0) <> w.balance_cents - w.held_cents
    limit 50`);
  const { rows: [n] } = await db.query<{ n: number }>('select count(*)::int as n from wallet.wallets');
  return { wallets: n!.n, broken: rows.map((r) => `wallet ${r.wallet_id} at entry ${r.seq}: ${r.why}`) };
}

/** Statuses whose price is held in the buyer's wallet (D9, D12: a disputed purchase keeps its hold). */
const HOLDING: TransactionStatus[] = ['funds_held', 'executing', 'delivered', 'validation_failed', 'disputed'];

/**
 * Every purchase's money as its status says (the transactions service's row against the wallet's hold
 * and entries): a holding status has its agreed price held and nothing settled; settled has its hold
 * settled, nothing left held, and the buyer charged the price less any refund; any other status holds
 * nothing and moved nothing out of the buyer's wallet.
 */
export async function entriesMatchStatus(db: pg.Client): Promise<{ purchases: number; wrong: string[] }> {
  const { rows } = await db.query<{ id: string; status: TransactionStatus; price: string | null; hold: string | null; held: string; out: string; refund: string }>(`
    with e as (
      select transaction_id,
             coalesce(sum(amount_cents) filter (where tx_type in ${HELD_TYPES}), 0) as held,
             coalesce(sum(amount_cents) filter (where tx_type = 'settlement_out'), 0) as out
      from wallet.ledger_entries where transaction_id is not null group by transaction_id
    )
    select t.id, t.status, t.agreed_price_cents::text as price, h.status as hold, coalesce(e.held, 0)::text as held,
           coalesce(e.out, 0)::text as out, coalesce(h.refund_cents, 0)::text as refund
    from transactions.transactions t left join wallet.holds h on h.transaction_id = t.id left join e on e.transaction_id = t.id`);
  const wrong: string[] = [];
  for (const r of rows) {
    const [price, held, out, refund] = [Number(r.price ?? 0), Number(r.held), Number(r.out), Number(r.refund)];
    const fine = HOLDING.includes(r.status) ? r.hold === 'held' && held === -price && out === 0
      : r.status === 'settled' ? r.hold === 'settled' && held === 0 && out === -(price - refund)
        : r.hold !== 'held' && r.hold !== 'settled' && held === 0 && out === 0;
    if (!fine) wrong.push(`${r.id} ${r.status} at ${price}: hold ${r.hold ?? 'none'}, held ${-held}, paid ${-out}, refunded ${refund}`);
  }
  return { purchases: rows.length, wrong };
}

/** D5.5: every key's final answers, however often and wherever it was sent, are one outcome. */
export function keysOnce(traffic: Traffic): { keys: number; twice: string[] } {
  const twice = [...traffic.keys].filter(([, k]) => new Set(k.answers).size > 1).map(([key, k]) => `${k.what} ${key}: ${[...new Set(k.answers)].join(' / ')}`);
  return { keys: traffic.keys.size, twice };
}

/**
 * Nothing stuck: every purchase reaches the status its flow left it to end in, within `boundMs` of
 * the load's end; one no flow knows of (its answer never came) must have ended or wait for a party.
 */
export async function nothingStuck(db: pg.Client, ledgers: Ledger[], boundMs: number): Promise<string[]> {
  const expected = new Map(ledgers.flatMap((l) => [...l.expected]));
  const waiting: TransactionStatus[] = [...TERMINAL_STATUSES, 'funds_held', 'awaiting_approval', 'negotiating'];
  const deadline = Date.now() + boundMs;
  for (;;) {
    const { rows } = await db.query<{ id: string; status: TransactionStatus; updated_at: Date }>('select id, status, updated_at from transactions.transactions');
    const stuck = rows.filter((r) => !(expected.get(r.id) ?? waiting).includes(r.status))
      .map((r) => `${r.id} ${r.status} since ${r.updated_at.toISOString()} (expected ${(expected.get(r.id) ?? ['unknown to its buyer: ended or waiting']).join('/')})`);
    const missing = [...expected.keys()].filter((id) => !rows.some((r) => r.id === id)).map((id) => `${id} answered but not in the database`);
    if ((stuck.length === 0 && missing.length === 0) || Date.now() > deadline) return [...stuck, ...missing];
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The milliseconds each purchase sent at a moment `when` picks took to have its price held, slowest first. */
export function holdLatencies(ledgers: Ledger[], when: (sent: number) => boolean, keyed?: boolean): number[] {
  return ledgers.flatMap((l) => l.holds).filter((h) => when(h.sent) && (keyed === undefined || h.keyed === keyed)).map((h) => h.held - h.sent).sort((a, b) => b - a);
}
