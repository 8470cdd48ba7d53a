import { sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectServiceDb } from '../src/index.js';
import { MAX_PREPARED, preparedName } from '../src/db/prepared.js';
import { createTestDatabase, type TestDatabase } from '../src/testing/index.js';

// Issue 14: a service's statements are prepared once per connection (Postgres parses and plans them
// once), named after their text.

interface Db {
  items: { id: number; label: string };
}
const migrations: Record<string, Migration> = {
  '0001': { up: async (db) => void (await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('label', 'text', (c) => c.notNull()).execute()) },
};

let database: TestDatabase;
let db: Kysely<Db>;
let close: () => Promise<void>;
beforeAll(async () => {
  database = await createTestDatabase();
  ({ db, close } = await connectServiceDb<Db>({ url: database.url, schema: 'preptest', migrations, poolSize: 1 }));
});
afterAll(async () => {
  await close();
  await database.drop();
});

describe('prepared statements', () => {
  it('names a parameterised statement by its text, the same name every time; none without parameters or when too long', () => {
    const text = 'select * from items where id = $1';
    expect(preparedName(text, 1)).toMatch(/^aex_[A-Za-z0-9_-]{22}$/);
    expect(preparedName(text, 1)).toBe(preparedName(text, 1));
    expect(preparedName('select * from items where id = $1 and label = $2', 2)).not.toBe(preparedName(text, 1));
    expect(preparedName('begin', 0)).toBeUndefined();
    expect(preparedName(`select ${'1, '.repeat(5_000)}$1`, 1)).toBeUndefined();
    expect(preparedName('select $1', 500)).toBeUndefined();
    expect(MAX_PREPARED).toBeGreaterThan(100);
  });

  it('prepares a statement once on its connection, then runs it by name with other values', async () => {
    await db.insertInto('items').values([{ id: 1, label: 'one' }, { id: 2, label: 'two' }]).execute();
    await db.transaction().execute(async (trx) => {
      const find = (id: number) => trx.selectFrom('items').select('label').where('id', '=', id).executeTakeFirst();
      expect(await find(1)).toEqual({ label: 'one' });
      expect(await find(2)).toEqual({ label: 'two' });
      const compiled = trx.selectFrom('items').select('label').where('id', '=', 1).compile();
      const { rows } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx);
      const prepared = rows.filter((r) => r.name === preparedName(compiled.sql, 1));
      expect(prepared).toEqual([{ name: preparedName(compiled.sql, 1), statement: compiled.sql }]);
      // A statement without parameters is not prepared.
      expect(rows.some((r) => /pg_prepared_statements/.test(r.statement))).toBe(false);
    });
  });

  it('prepares nothing when turned off (DATABASE_PREPARED_STATEMENTS=false, a pooler that cannot keep them)', async () => {
    const plain = await connectServiceDb<Db>({ url: database.url, schema: 'preptest', migrations, poolSize: 1, preparedStatements: false });
    try {
      await plain.db.transaction().execute(async (trx) => {
        expect(await trx.selectFrom('items').select('label').where('id', '=', 1).executeTakeFirst()).toEqual({ label: 'one' });
        const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements`.execute(trx);
        expect(rows).toEqual([]);
      });
    } finally {
      await plain.close();
    }
  });

  it('keeps errors per call: a failing prepared statement leaves the connection usable', async () => {
    const bad = (label: string | null) => db.insertInto('items').values({ id: 9, label: label as string }).execute();
    await expect(bad(null)).rejects.toThrow(/null value/);
    await bad('nine');
    await expect(bad('again')).rejects.toThrow(/duplicate key/);
    expect(await db.selectFrom('items').select('label').where('id', '=', 9).executeTakeFirst()).toEqual({ label: 'nine' });
  });
});
