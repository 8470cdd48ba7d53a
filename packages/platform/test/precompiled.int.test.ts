import { sql, type Kysely, type Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectServiceDb, precompiled, type Slots } from '../src/index.js';
import { createTestDatabase, type TestDatabase } from '../src/testing/index.js';

// A hot query is built and compiled by Kysely once, then run with each call's values.

interface Db {
  items: { itemId: number; itemLabel: string; attrs: Record<string, unknown> };
}
const migrations: Record<string, Migration> = {
  '0001': {
    up: async (db) => void (await db.schema.createTable('items').addColumn('item_id', 'integer', (c) => c.primaryKey())
      .addColumn('item_label', 'text', (c) => c.notNull()).addColumn('attrs', 'jsonb', (c) => c.notNull()).execute()),
  },
};

let database: TestDatabase;
let db: Kysely<Db>;
let close: () => Promise<void>;
beforeAll(async () => {
  database = await createTestDatabase();
  ({ db, close } = await connectServiceDb<Db>({ url: database.url, schema: 'precomp', migrations }));
});
afterAll(async () => {
  await close();
  await database.drop();
});

describe('precompiled queries', () => {
  it('builds once and runs with each call\'s values, in every kind of place a value goes, the names mapped both ways', async () => {
    let builds = 0;
    const insert = precompiled((k: Kysely<Db>, $: Slots<{ id: number; label: string; attrs: string }>) => {
      builds++;
      return k.insertInto('items').values({ itemId: $.id, itemLabel: $.label, attrs: $.attrs as never }).returningAll();
    });
    const find = precompiled((k: Kysely<Db>, $: Slots<{ ids: number[]; prefix: string; floor: number }>) => {
      builds++;
      return k.selectFrom('items').select(['itemId', 'itemLabel', 'attrs']).where(sql<boolean>`item_id = any(${$.ids}::int[])`).where('itemLabel', 'like', $.prefix).where('itemId', '>', $.floor).orderBy('itemId');
    });
    const [first] = (await insert(db, { id: 1, label: 'a-one', attrs: JSON.stringify({ snake_key: 1 }) })).rows;
    expect(first).toEqual({ itemId: 1, itemLabel: 'a-one', attrs: { snake_key: 1 } });
    await db.transaction().execute(async (trx) => {
      await insert(trx, { id: 2, label: 'a-two', attrs: '{}' });
      await insert(trx, { id: 3, label: 'b-three', attrs: '{}' });
    });
    expect((await find(db, { ids: [1, 2, 3], prefix: 'a-%', floor: 0 })).rows.map((r) => r.itemId)).toEqual([1, 2]);
    expect((await find(db, { ids: [2, 3], prefix: '%', floor: 2 })).rows.map((r) => r.itemLabel)).toEqual(['b-three']);
    expect(builds).toBe(2);
  });
});
