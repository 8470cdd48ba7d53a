import { sql, type Kysely } from 'kysely';

// Frozen. D18: signed receipts.
// - What a receipt states that the purchase's row did not keep: the digests of its input and output
//   (RFC 8785, SHA-256), the provider's signature of its delivery, and what a dispute refunded.
// - `receipts`: one per ended purchase whose money was held, made once in the step that ended it.
// - `receipt_keys`: the exchange's receipt keys by generation, public parts only (the private key of
//   a generation is derived from RECEIPT_SIGNING_KEY); the newest not retired signs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('transactions')
    .addColumn('input_digest', 'text')
    .addColumn('output_digest', 'text')
    .addColumn('delivery_signature', 'text')
    .addColumn('delivery_signature_timestamp', 'text')
    .addColumn('refunded_cents', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createTable('receipts')
    .addColumn('transaction_id', 'uuid', (c) => c.primaryKey())
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('jws', 'text', (c) => c.notNull())
    .addColumn('claims', 'jsonb', (c) => c.notNull())
    .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createTable('receipt_keys')
    .addColumn('generation', 'integer', (c) => c.primaryKey())
    .addColumn('kid', 'text', (c) => c.notNull().unique())
    .addColumn('x', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('retired_at', 'timestamptz')
    .execute();
}
