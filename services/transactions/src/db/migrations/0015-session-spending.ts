import { sql, type Kysely } from 'kysely';

// Frozen. D10.2 with D17.4: a prepaid session's budget is what its buyer committed to spend, so the
// rolling 24 h spending a creation, an accept, an approval or a new session is judged on counts it —
// what it held, less what it returned once closed — and not its calls again (they spend inside it).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create or replace function party_totals(lock_keys text[], consumer uuid, provider uuid, spent_since timestamptz, excluding uuid)
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
          (select coalesce(sum(coalesce(agreed_price_cents, pending_accept_price_cents)), 0)::bigint from transactions
            where consumer_agent_id = consumer and session_id is null and (excluding is null or id <> excluding)
              and ((funds_held_at > spent_since and hold in ('held', 'settling', 'settled')) or hold = 'requested'))
          + (select coalesce(sum(budget_cents - returned_cents), 0)::bigint from sessions
            where consumer_agent_id = consumer and created_at > spent_since and hold in ('requested', 'held', 'returning', 'returned'))
        ) end;
    end $$`.execute(db);
}
