/**
 * `pnpm bench:ledger`: the operator's ledger check (GET /admin/v1/ledger/check) on a ledger of a
 * million entries, against one sequential read of that ledger measured in the same run.
 *
 * The ledger is written straight into the wallet service's tables, as the saga would have left it:
 * 2,000 funded consumers, 200 providers and the platform wallet; about 166,000 settled purchases of
 * six entries each (hold, release, payment, receipt and the fee out and in), every entry carrying
 * the balances after it, every wallet's balance and every hold matching its entries — so the check
 * finds no violation and the figure is the check's own work.
 *
 *   pnpm bench:ledger                  1,000,000 entries
 *   pnpm bench:ledger --entries 200000
 *   pnpm bench:ledger --keep          leaves the database for a look with psql (its URL printed)
 */
import { sql } from 'kysely';
import { loadConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, testLogger } from '@aex/platform/testing';
import { startWalletService } from '@aex/wallet';
import { checkLedgerInvariants } from '../../../services/wallet/src/wallets/check.js';
import { row, table, writeReport } from '../report.js';

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const ENTRIES = Number(arg('--entries') ?? 1_000_000);
const CONSUMERS = 2000;
const PROVIDERS = 200;
const PER_PURCHASE = 6;
const purchases = Math.floor((ENTRIES - CONSUMERS) / PER_PURCHASE);
/** What the gateway allows a service call by default (RPC_TIMEOUT_MS): the check must answer within it. */
const TARGET_MS = 10_000;

const database = await createTestDatabase();
const { bus, dispose } = await createTestBus('jetstream');
const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, PAYMENTS_PROVIDER: 'sandbox' });
const wallet = await startWalletService({ bus, databaseUrl: database.url, config, logger: testLogger() });
const db = wallet.deps.db;

try {
  console.log(`seeding ${purchases.toLocaleString()} settled purchases (${(CONSUMERS + purchases * PER_PURCHASE).toLocaleString()} ledger entries)…`);
  const seeded = Date.now();
  await seed();
  console.log(`  seeded in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);
  await sql`vacuum analyze`.execute(db).catch(() => sql`analyze`.execute(db));

  const timeOf = async (fn: () => Promise<unknown>) => {
    const started = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  // Alternating, three of each, after one warm-up of each (the ledger in the buffer cache).
  await sql`select count(*), sum(amount_cents) from ledger_entries`.execute(db);
  const warm = await checkLedgerInvariants(wallet.deps);
  if (!warm.ok) throw new Error(`the seeded ledger has violations: ${JSON.stringify(warm.violations.slice(0, 3))}`);
  const checks: number[] = [];
  const scans: number[] = [];
  for (let i = 0; i < 3; i++) {
    scans.push(await timeOf(() => sql`select count(*), sum(amount_cents) from ledger_entries`.execute(db)));
    checks.push(await timeOf(() => checkLedgerInvariants(wallet.deps, { timeoutMs: TARGET_MS })));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const check = median(checks);
  const scan = median(scans);
  const rows = [
    row({
      case: `ledger check, ${(CONSUMERS + purchases * PER_PURCHASE).toLocaleString()} entries, ${warm.walletsChecked.toLocaleString()} wallets`,
      value: check, unit: 'ms', baseline: scan, baselineName: 'one sequential read of the ledger', lowerIsBetter: true,
      target: `answers within RPC_TIMEOUT_MS (${TARGET_MS} ms)`, met: Math.max(...checks) < TARGET_MS,
    }),
  ];
  console.log(`\n  checks: ${checks.map((c) => c.toFixed(0)).join(', ')} ms; sequential reads: ${scans.map((s) => s.toFixed(0)).join(', ')} ms\n`);
  console.log(table(rows));
  writeReport(arg('--json'), 'ledger', rows, { entries: CONSUMERS + purchases * PER_PURCHASE, purchases, checks, scans });
} finally {
  await wallet.stop();
  await dispose();
  if (args.includes('--keep')) console.log(`kept: ${database.url}`);
  else await database.drop();
}

/** The ledger a saga would have written, in a few statements. */
async function seed(): Promise<void> {
  const now = new Date();
  const platform = (await db.selectFrom('wallets').select('id').where('kind', '=', 'platform').executeTakeFirstOrThrow()).id;
  await sql`create temporary table bench_wallets as
    select n, gen_random_uuid() as id, case when n < ${CONSUMERS} then 'consumer' else 'provider' end as role
    from generate_series(0, ${CONSUMERS + PROVIDERS - 1}) as n`.execute(db);
  await sql`insert into wallets (id, kind, agent_id, account_id, balance_cents, held_cents, created_at, updated_at)
    select id, 'agent', gen_random_uuid(), gen_random_uuid(), 0, 0, ${now}, ${now} from bench_wallets`.execute(db);
  // Each purchase: a consumer, a provider, a price and its 5 % fee (rounded half up).
  await sql`create temporary table bench_purchases as
    select i, gen_random_uuid() as transaction_id,
           (select id from bench_wallets where n = i % ${CONSUMERS}) as consumer,
           (select id from bench_wallets where n = ${CONSUMERS} + i % ${PROVIDERS}) as provider,
           (100 + i % 900)::bigint as price, floor(((100 + i % 900) * 5 + 50) / 100)::bigint as fee
    from generate_series(0, ${purchases - 1}) as i`.execute(db);
  // Every movement in order (`ord`): each consumer's funding first, then each purchase's six entries.
  // `balance` is the change of the wallet's balance, `amount` that of its available balance (D13.2).
  await sql`create temporary table bench_moves as
    select c.n::bigint as ord, w.id as wallet_id, 'fund'::text as tx_type, null::uuid as transaction_id, s.total as amount, s.total as balance
    from bench_wallets w join (select consumer, sum(price) as total from bench_purchases group by consumer) s on s.consumer = w.id
    join bench_wallets c on c.id = w.id
    union all
    select ${CONSUMERS} + p.i * 6 + k, m.wallet_id, m.tx_type, p.transaction_id, m.amount, m.balance
    from bench_purchases p
    cross join lateral (values
      (0, p.consumer, 'fund_hold', -p.price, 0::bigint),
      (1, p.consumer, 'fund_release', p.price, 0::bigint),
      (2, p.consumer, 'settlement_out', -p.price, -p.price),
      (3, p.provider, 'settlement_in', p.price, p.price),
      (4, p.provider, 'platform_fee', -p.fee, -p.fee),
      (5, ${platform}::uuid, 'platform_fee', p.fee, p.fee)
    ) as m(k, wallet_id, tx_type, amount, balance)`.execute(db);
  await sql`insert into ledger_entries (id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, balance_after_cents, available_after_cents, description, created_at)
    select gen_random_uuid(), wallet_id, coalesce(transaction_id::text, 'fund:' || wallet_id), transaction_id, tx_type, amount,
           sum(balance) over (partition by wallet_id order by ord), sum(amount) over (partition by wallet_id order by ord), tx_type, ${now}
    from bench_moves order by ord`.execute(db);
  await sql`insert into holds (transaction_id, wallet_id, amount_cents, attempt, status, provider_wallet_id, fee_cents, created_at, closed_at)
    select transaction_id, consumer, price, 1, 'settled', provider, fee, ${now}, ${now} from bench_purchases`.execute(db);
  await sql`insert into funding_sessions (id, wallet_id, provider, amount_cents, status, created_at, paid_at)
    select 'cs_bench_' || wallet_id, wallet_id, 'sandbox', amount, 'paid', ${now}, ${now} from bench_moves where tx_type = 'fund'`.execute(db);
  await sql`update wallets w set balance_cents = s.balance from (select wallet_id, sum(balance) as balance from bench_moves group by wallet_id) s where s.wallet_id = w.id`.execute(db);
}
