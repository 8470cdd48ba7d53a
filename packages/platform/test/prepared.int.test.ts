import { Kysely, PostgresDialect, sql, type Migration } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectServiceDb } from '../src/index.js';
import type pg from 'pg';
import { COMMIT_AFTER, MAX_PREPARED, PreparingClient, preparedName } from '../src/db/prepared.js';
import { createTestDatabase, type TestDatabase } from '../src/testing/index.js';

// A service's statements are prepared once per connection (Postgres parses and plans them
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
// Every test starts from the same two items, whatever the others wrote.
beforeEach(async () => {
  await db.deleteFrom('items').execute();
  await db.insertInto('items').values([{ id: 1, label: 'one' }, { id: 2, label: 'two' }]).execute();
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

// Kysely's `begin` goes out in the same write as the transaction's first statement.
describe('pipelined begin', () => {
  const labels = async () => (await db.selectFrom('items').select('label').orderBy('id').execute()).map((r) => r.label);
  /** A raw client of the same kind the pools use, counting the round trips it waits out (ReadyForQuery). */
  async function rawClient() {
    const client = new PreparingClient({ connectionString: database.url, options: '-c search_path=preptest' });
    await client.connect();
    let roundTrips = 0;
    (client as unknown as { connection: pg.Connection }).connection.on('readyForQuery', () => roundTrips++);
    return { client, roundTrips: () => roundTrips };
  }
  class Rollback extends Error {}
  const rolledBack = async (fn: Parameters<ReturnType<Kysely<Db>['transaction']>['execute']>[0]) => {
    await expect(db.transaction().execute(fn)).rejects.toBeInstanceOf(Rollback);
  };

  it('saves a round trip per transaction, and the first statement is inside the transaction', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      const trx = new Kysely<Db>({ dialect: new PostgresDialect({ pool: { connect: async () => Object.assign(client, { release: () => {} }), end: async () => {} } as never }) });
      const before = roundTrips();
      await trx.transaction().execute(async (t) => void (await t.insertInto('items').values({ id: 100, label: 'hundred' }).execute()));
      // The statement (with its begin) and the commit: two, not three.
      expect(roundTrips() - before).toBe(2);
      await expect(
        trx.transaction().execute(async (t) => {
          await t.insertInto('items').values({ id: 101, label: 'gone' }).execute();
          throw new Rollback();
        }),
      ).rejects.toBeInstanceOf(Rollback);
      const { rows } = (await client.query('select id from items where id = any($1) order by id', [[100, 101]])) as pg.QueryResult<{ id: number }>;
      expect(rows).toEqual([{ id: 100 }]);
    } finally {
      await client.end();
    }
  });

  it('keeps a first statement without parameters inside the transaction (sent after a begin of its own)', async () => {
    await rolledBack(async (trx) => {
      await sql`insert into items (id, label) values (102, 'raw'); insert into items (id, label) values (103, 'raw')`.execute(trx);
      expect(await trx.selectFrom('items').select('id').where('id', '>=', 102).execute()).toHaveLength(2);
      throw new Rollback();
    });
    expect(await labels()).not.toContain('raw');
  });

  it('keeps statements given together in a transaction in their order, all inside it', async () => {
    await rolledBack(async (trx) => {
      await Promise.all([104, 105, 106].map((id) => trx.insertInto('items').values({ id, label: 'together' }).execute()));
      throw new Rollback();
    });
    expect(await labels()).not.toContain('together');
  });

  it('sends nothing for an empty transaction, and the connection goes on as usual', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      const before = roundTrips();
      expect(await client.query('begin', [])).toMatchObject({ command: 'BEGIN' });
      expect(await client.query('commit', [])).toMatchObject({ command: 'COMMIT' });
      expect(roundTrips() - before).toBe(0);
      expect((await client.query('select $1::int as n', [7])).rows).toEqual([{ n: 7 }]);
    } finally {
      await client.end();
    }
  });

  it('gives a failing first statement its own error and leaves the connection usable (a name is not marked prepared when its parse failed)', async () => {
    const { client } = await rawClient();
    try {
      await client.query('begin', []);
      await expect(client.query('selec $1', [1])).rejects.toThrow(/syntax error/);
      await client.query('rollback', []);
      await client.query('begin', []);
      await expect(client.query('insert into items (id, label) values ($1, $2)', [1, 'duplicate'])).rejects.toThrow(/duplicate key/);
      await client.query('rollback', []);
      await expect(client.query('selec $1', [1])).rejects.toThrow(/syntax error/);
      expect((await client.query('select label from items where id = $1', [1])).rows).toEqual([{ label: 'one' }]);
    } finally {
      await client.end();
    }
  });

  it('gives a failed begin to the statement behind it, which Postgres then skips', async () => {
    const { client } = await rawClient();
    try {
      // A transaction already failed: Postgres refuses the pipelined begin, and skips the insert behind it.
      await client.query('BEGIN');
      await expect(client.query('select 1/0')).rejects.toThrow(/division by zero/);
      await client.query('begin', []);
      await expect(client.query('insert into items (id, label) values ($1, $2)', [107, 'skipped'])).rejects.toThrow(/current transaction is aborted/);
      await client.query('ROLLBACK');
      expect((await client.query('select count(*)::int as n from items where id = $1', [107])).rows).toEqual([{ n: 0 }]);
      // pg's callback form behind a failed begin hears of the begin's error.
      await client.query('BEGIN');
      await expect(client.query('select 1/0')).rejects.toThrow(/division by zero/);
      await client.query('begin', []);
      const heard = await new Promise<Error | undefined>((resolve) => client.query('select 1', (err: Error | undefined) => resolve(err)));
      expect(heard?.message).toMatch(/current transaction is aborted/);
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
  });

  it('commits with a COMMIT_AFTER statement: a transaction of one such statement is one round trip', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      const trx = new Kysely<Db>({ dialect: new PostgresDialect({ pool: { connect: async () => Object.assign(client, { release: () => {} }), end: async () => {} } as never }) });
      const before = roundTrips();
      await trx.transaction().execute(async (t) => void (await sql`${sql.raw(COMMIT_AFTER)}insert into items (id, label) values (${110}, ${'pipelined'})`.execute(t)));
      expect(roundTrips() - before).toBe(1);
      // Committed: another connection sees it.
      expect(await labels()).toContain('pipelined');
      // Two statements, the last one committing: two round trips.
      const again = roundTrips();
      await trx.transaction().execute(async (t) => {
        await t.insertInto('items').values({ id: 111, label: 'first' }).execute();
        await sql`${sql.raw(COMMIT_AFTER)}insert into items (id, label) values (${112}, ${'last'})`.execute(t);
      });
      expect(roundTrips() - again).toBe(2);
      expect(await labels()).toEqual(expect.arrayContaining(['first', 'last']));
    } finally {
      await client.end();
    }
  });

  it('rolls everything back when the COMMIT_AFTER statement fails (Postgres skips its COMMIT)', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ id: 113, label: 'undone' }).execute();
        await sql`${sql.raw(COMMIT_AFTER)}insert into items (id, label) values (${1}, ${'duplicate'})`.execute(trx);
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await labels()).not.toContain('undone');
    // The pool's connection goes on as usual.
    expect(await db.selectFrom('items').select('label').where('id', '=', 1).executeTakeFirst()).toEqual({ label: 'one' });
  });

  it('refuses anything but the commit after a COMMIT_AFTER statement (it cannot be undone)', async () => {
    const { client } = await rawClient();
    try {
      await client.query('begin', []);
      await client.query(`${COMMIT_AFTER}insert into items (id, label) values ($1, $2)`, [114, 'kept']);
      await expect(client.query('rollback', [])).rejects.toThrow(/committed with its last statement/);
      expect((await client.query('select label from items where id = $1', [114])).rows).toEqual([{ label: 'kept' }]);
    } finally {
      await client.end();
    }
  });
});
