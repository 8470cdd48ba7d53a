import type { Kysely } from 'kysely';

// Frozen. D20.3: a receipt names the scheme that signed the delivery — `x-ae` (D3) or `rfc9421`
// (D20), with the RFC 9421 `Signature-Input` it verified. Rows from before are X-AE-signed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('transactions')
    .addColumn('delivery_signature_scheme', 'text')
    .addColumn('delivery_signature_input', 'text')
    .execute();
  await db.updateTable('transactions').set({ delivery_signature_scheme: 'x-ae' }).where('delivery_signature', 'is not', null).execute();
}
