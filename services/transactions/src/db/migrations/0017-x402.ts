import { sql, type Kysely } from 'kysely';

// Frozen. D19.2: a purchase made by an x402 payment keeps the payload's nonce (used once per payer:
// a replayed payload finds its purchase), the payment's `maxTimeoutSeconds` (its expiry after the
// hold) and whether a verify answered it valid (once).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions')
    .addColumn('x402_nonce', 'text')
    .addColumn('x402_timeout_seconds', 'integer')
    .addColumn('x402_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await sql`create unique index transactions_x402_nonce on transactions (consumer_agent_id, x402_nonce) where x402_nonce is not null`.execute(db);
}
