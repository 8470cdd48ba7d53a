import { sql, type Kysely, type Migration } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectServiceDb, type ServiceDb } from '../src/index.js';
import { MAX_PREPARED, PreparingClient, preparedName } from '../src/db/prepared.js';
import { createTestDatabase, type TestDatabase } from '../src/testing/index.js';

// The service's client on real Postgres: statements prepared once per connection (Postgres parses
// and plans them once), named after their text; a transaction's BEGIN sent with its first statement
// when asked (`deferBegin`), and its COMMIT with its last (`queryThenCommit`). The transactions of the service's driver, which asks for it and for the
// COMMIT, are `service-driver.int.test.ts`'s.

interface Db {
  items: { id: number; label: string };
}
const migrations: Record<string, Migration> = {
  '0001': { up: async (db) => void (await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('label', 'text', (c) => c.notNull()).execute()) },
};

let database: TestDatabase;
let service: ServiceDb<Db>;
let db: Kysely<Db>;
beforeAll(async () => {
  database = await createTestDatabase();
  service = await connectServiceDb<Db>({ url: database.url, schema: 'preptest', migrations, poolSize: 1 });
  db = service.db;
});
afterAll(async () => {
  await service?.close();
  await database?.drop();
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

  it('does not mark a name prepared when its parse failed: the statement fails the same way again', async () => {
    const bad = () => db.transaction().execute((trx) => sql`selec ${1}`.execute(trx));
    await expect(bad()).rejects.toThrow(/syntax error/);
    await expect(bad()).rejects.toThrow(/syntax error/);
    expect(await db.selectFrom('items').select('label').where('id', '=', 1).executeTakeFirst()).toEqual({ label: 'one' });
  });
});

describe('the client’s deferred BEGIN', () => {
  /** A client of the kind the pools use, on its own, counting the round trips it waits out (ReadyForQuery). */
  async function rawClient() {
    const client = new PreparingClient({ connectionString: database.url, options: '-c search_path=preptest' });
    await client.connect();
    let roundTrips = 0;
    (client as unknown as { connection: pg.Connection }).connection.on('readyForQuery', () => roundTrips++);
    return { client, roundTrips: () => roundTrips };
  }
  const countOf = async (client: pg.Client, id: number) => (await client.query<{ n: number }>('select count(*)::int as n from items where id = $1', [id])).rows[0]!.n;

  it('ends a transaction that sent nothing without a word, and one that sent a statement not', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      client.deferBegin();
      expect(client.endUnsent()).toBe(true);
      expect(roundTrips()).toBe(0);
      client.deferBegin();
      await client.query('insert into items (id, label) values ($1, $2)', [100, 'sent']);
      // The BEGIN went with the insert: one round trip, and the transaction is open in Postgres.
      expect(roundTrips()).toBe(1);
      expect(client.endUnsent()).toBe(false);
      await client.query('rollback');
      expect(await countOf(client, 100)).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('gives a failed BEGIN to the statement behind it, which Postgres then skips', async () => {
    const { client } = await rawClient();
    try {
      // A transaction already failed: Postgres refuses the pipelined BEGIN, and skips the insert behind it.
      await client.query('BEGIN');
      await expect(client.query('select 1/0')).rejects.toThrow(/division by zero/);
      client.deferBegin();
      await expect(client.query('insert into items (id, label) values ($1, $2)', [107, 'skipped'])).rejects.toThrow(/current transaction is aborted/);
      await client.query('ROLLBACK');
      expect(await countOf(client, 107)).toBe(0);
      // pg's callback form behind a failed BEGIN (sent on its own: the statement has no parameters) hears of the BEGIN's error.
      await client.query('BEGIN');
      await expect(client.query('select 1/0')).rejects.toThrow(/division by zero/);
      client.deferBegin();
      const heard = await new Promise<Error | undefined>((resolve) => client.query('select 1', (err: Error | undefined) => resolve(err)));
      expect(heard?.message).toMatch(/current transaction is aborted/);
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
  });

  it('tells no statement apart by its text: `begin`, `commit` and `rollback` given to it are sent to Postgres as they are', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      expect(await client.query('begin', [])).toMatchObject({ command: 'BEGIN' });
      await client.query('insert into items (id, label) values ($1, $2)', [108, 'sent']);
      expect(await client.query('commit', [])).toMatchObject({ command: 'COMMIT' });
      // With no transaction open, Postgres answers the rollback itself (with a warning).
      expect(await client.query('rollback', [])).toMatchObject({ command: 'ROLLBACK' });
      expect(roundTrips()).toBe(4);
      expect(await countOf(client, 108)).toBe(1);
    } finally {
      await client.end();
    }
  });

  it('answers a statement sent with its COMMIT with the statement’s own result, in one round trip', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      client.deferBegin();
      const result = await client.queryThenCommit<{ id: number; label: string }>('insert into items (id, label) values ($1, $2) returning id, label', [109, 'committed']);
      expect({ command: result.command, rowCount: result.rowCount, rows: result.rows, roundTrips: roundTrips() })
        .toEqual({ command: 'INSERT', rowCount: 1, rows: [{ id: 109, label: 'committed' }], roundTrips: 1 });
      expect(client.endUnsent()).toBe(false);
      expect(await countOf(client, 109)).toBe(1);
    } finally {
      await client.end();
    }
  });

  it('commits after a last statement given while another still runs, by a COMMIT of its own', async () => {
    const { client, roundTrips } = await rawClient();
    try {
      client.deferBegin();
      const running = client.query('insert into items (id, label) values ($1, $2)', [110, 'running']);
      const last = client.queryThenCommit('insert into items (id, label) values ($1, $2)', [111, 'last']);
      await Promise.all([running, last]);
      // The first with its BEGIN, the last, then its COMMIT.
      expect(roundTrips()).toBe(3);
      expect([await countOf(client, 110), await countOf(client, 111)]).toEqual([1, 1]);
      // No transaction is left open: a rollback now finds none to undo.
      await client.query('rollback');
      expect(await countOf(client, 111)).toBe(1);
    } finally {
      await client.end();
    }
  });
});
