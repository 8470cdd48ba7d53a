import { sql, type Kysely } from 'kysely';

// Frozen. D10.3: a purchase waiting for its consumer's account owner to approve it, and how that
// was decided — null for a purchase that never needed an approval. Listed per account by the
// owner, newest first; only the few purchases that needed one are in the index, and the column
// never changes for the others, so their status changes stay heap-only.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('approval', 'jsonb').execute();
  await sql`create index transactions_approvals on transactions (consumer_account_id, created_at desc, id desc) where approval is not null`.execute(db);
}
