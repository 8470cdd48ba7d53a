import { sql, type Kysely } from 'kysely';

// Frozen. D9.6: each agent's transactions in progress kept as two running counts — how
// many it started taking part in, how many of those ended — written by triggers of the transactions
// table itself, so that every way a transaction is created or ends is counted, by this version or
// any other. In progress = started − ended.
//
// They replace the partial indexes of migration 0005. Those made every status change an update of
// six indexes (their predicate names `status`), and a count through them read every entry left by
// earlier versions of the rows until a vacuum removed them: at a hundred purchases a second, the
// count of a busy provider grew from a few entries to thousands within the minute between two
// vacuums, and a count planned while the table was small kept reading the whole table. Without
// them a change of status alone is a heap-only update. The counts are two rows per agent: a
// creation writes the `started` rows (under the parties' advisory locks it already holds), an end
// the `ended` rows, so creations and ends of the same agent never wait for each other's row locks.
// Rows are locked in agent id order, so two ends of transactions between the same two agents in
// opposite roles cannot deadlock.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  // No transaction is written while the counts are taken from the table (the migration's own transaction).
  await sql`lock table transactions in share row exclusive mode`.execute(db);
  await sql`
    create table agent_activity (
      agent_id uuid not null,
      counter text not null check (counter in ('started', 'ended')),
      n bigint not null check (n >= 0),
      primary key (agent_id, counter)
    ) with (fillfactor = 50)`.execute(db);
  await sql`
    insert into agent_activity (agent_id, counter, n)
    select agent_id, 'started', count(*) from (
      select consumer_agent_id as agent_id from transactions where status not in ('settled', 'cancelled', 'expired', 'failed')
      union all
      select provider_agent_id from transactions where status not in ('settled', 'cancelled', 'expired', 'failed') and provider_agent_id <> consumer_agent_id
    ) as parties group by agent_id`.execute(db);
  await sql`
    create function transaction_activity_counted() returns trigger language plpgsql set search_path from current as $$
    begin
      insert into agent_activity as a (agent_id, counter, n)
      select party, case tg_op when 'INSERT' then 'started' else 'ended' end, 1
      from unnest(case when new.consumer_agent_id = new.provider_agent_id then array[new.consumer_agent_id]
        else array[least(new.consumer_agent_id, new.provider_agent_id), greatest(new.consumer_agent_id, new.provider_agent_id)] end) as party
      on conflict (agent_id, counter) do update set n = a.n + 1;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger transactions_started after insert on transactions for each row
    when (new.status not in ('settled', 'cancelled', 'expired', 'failed')) execute function transaction_activity_counted()`.execute(db);
  await sql`
    create trigger transactions_ended after update of status on transactions for each row
    when (old.status not in ('settled', 'cancelled', 'expired', 'failed') and new.status in ('settled', 'cancelled', 'expired', 'failed'))
    execute function transaction_activity_counted()`.execute(db);
  await sql`drop index transactions_active_consumer`.execute(db);
  await sql`drop index transactions_active_provider`.execute(db);
  // Room on each page for a row's next versions, so its changes of status stay heap-only.
  await sql`alter table transactions set (fillfactor = 85)`.execute(db);
}
