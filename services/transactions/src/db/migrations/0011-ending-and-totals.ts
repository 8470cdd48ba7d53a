import { sql, type Kysely } from 'kysely';

// Frozen. Two things a purchase step needs:
// - Terminal means settled (D9.7, D9.9): a transaction ending while its price is held or on its way
//   keeps its status until the wallet confirms the return; the status it is ending with, and why,
//   wait in `ending_status` and `ending_reason` until then.
// - The totals a creation, an accept or an approval decides on (D9.6, D10.2), read under the
//   parties' locks: `party_totals` takes each party's advisory lock (in the order given) and then
//   reads, each query with a snapshot of its own (a volatile function's), so it sees every
//   transaction the lock's previous holder committed. One round trip for the locks and the totals.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('ending_status', 'text').addColumn('ending_reason', 'text').execute();
  await sql`
    create function party_totals(lock_keys text[], consumer uuid, provider uuid, spent_since timestamptz, excluding uuid)
    returns table (consumer_active int, provider_active int, spent_cents bigint)
    language plpgsql volatile set search_path from current as $$
    declare
      k text;
    begin
      foreach k in array lock_keys loop
        perform pg_advisory_xact_lock(hashtextextended(k, 0));
      end loop;
      return query select
        (select coalesce(sum(case counter when 'started' then n else -n end), 0)::int from agent_activity where agent_id = consumer),
        (select coalesce(sum(case counter when 'started' then n else -n end), 0)::int from agent_activity where agent_id = provider),
        case when spent_since is null then 0::bigint else (
          select coalesce(sum(coalesce(agreed_price_cents, pending_accept_price_cents)), 0)::bigint from transactions
          where consumer_agent_id = consumer and (excluding is null or id <> excluding)
            and ((funds_held_at > spent_since and hold in ('held', 'settling', 'settled')) or hold = 'requested')
        ) end;
    end $$`.execute(db);
}
