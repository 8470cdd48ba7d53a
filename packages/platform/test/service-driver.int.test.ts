import { CompiledQuery, sql, type Kysely, type Migration, type Transaction } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectServiceDb, type ServiceDb } from '../src/index.js';
import { LastStatement } from '../src/db/driver.js';
import { createTestDatabase, type TestDatabase } from '../src/testing/index.js';
import { countedDb, type CountedDb } from './counted-db.js';

// The service's Kysely driver (`ServiceDialect`) on real Postgres, its round trips and statements
// counted on one connection: a transaction's BEGIN goes with its first statement, its COMMIT with a
// `LastStatement`; with plain clients (DATABASE_PREPARED_STATEMENTS=false) both are statements of
// their own. Nothing is decided by a statement's text: only by what the driver is asked.

interface Db {
  items: { id: number; label: string };
  /** Rows whose item must exist by the commit (a deferred constraint, checked by the COMMIT). */
  refs: { id: number; itemId: number };
}
const migrations: Record<string, Migration> = {
  '0001': {
    async up(db) {
      await db.schema.createTable('items').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('label', 'text', (c) => c.notNull()).execute();
      await sql`create table refs (id integer primary key, item_id integer not null references items (id) on delete cascade deferrable initially deferred)`.execute(db);
    },
  },
};

let database: TestDatabase;
let service: ServiceDb<Db>;
let preparing: CountedDb<Db>;
let plain: CountedDb<Db>;
beforeAll(async () => {
  database = await createTestDatabase();
  service = await connectServiceDb<Db>({ url: database.url, schema: 'drivertest', migrations });
  preparing = await countedDb<Db>({ url: database.url, schema: 'drivertest', role: service.role });
  plain = await countedDb<Db>({ url: database.url, schema: 'drivertest', role: service.role, preparedStatements: false });
});
afterAll(async () => {
  await Promise.all([preparing?.close(), plain?.close()]);
  await service?.close();
  await database?.drop();
});
beforeEach(async () => {
  await service.db.deleteFrom('items').execute();
  await service.db.insertInto('items').values([{ id: 1, label: 'one' }, { id: 2, label: 'two' }]).execute();
});

const INSERT = 'insert into items (id, label) values ($1, $2)';
const insert = (trx: Kysely<Db>, id: number, label: string) => trx.executeQuery(CompiledQuery.raw(INSERT, [id, label]));
const insertLast = (trx: Kysely<Db>, id: number, label: string) => trx.executeQuery(new LastStatement(INSERT, [id, label]));
/** The labels committed, read on another connection. */
const labels = async () => (await service.db.selectFrom('items').select('label').orderBy('id').execute()).map((r) => r.label);
class Rollback extends Error {}

/** What `fn` sent on the counted connection: its round trips and statements, and how it ended ('ok' or the error's message). */
async function measured(fn: (db: Kysely<Db>) => Promise<unknown>, on: CountedDb<Db> = preparing) {
  const [trips, from] = [on.roundTrips(), on.statements.length];
  const outcome = await fn(on.db).then(() => 'ok', (err: Error) => err.message);
  return { outcome, roundTrips: on.roundTrips() - trips, statements: on.statements.slice(from) };
}
/** A transaction of one LastStatement costs one round trip: the connection's state is as new. */
const oneRoundTrip = async () => expect((await measured((db) => db.transaction().execute((trx) => insertLast(trx, 199, 'after')))).roundTrips).toBe(1);

describe('transactions through the service driver', () => {
  it('commits a transaction of one LastStatement in one round trip, BEGIN and COMMIT included', async () => {
    expect(await measured((db) => db.transaction().execute((trx) => insertLast(trx, 110, 'pipelined')))).toEqual({ outcome: 'ok', roundTrips: 1, statements: [INSERT] });
    expect(await labels()).toContain('pipelined');
  });

  it('costs a round trip for each statement before the last: one then a LastStatement, two; two then a LastStatement, three', async () => {
    const one = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 111, 'first');
      await insertLast(trx, 112, 'last');
    }));
    const two = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 113, 'first');
      await insert(trx, 114, 'second');
      await insertLast(trx, 115, 'last');
    }));
    expect([one.roundTrips, two.roundTrips]).toEqual([2, 3]);
    expect([one.statements, two.statements]).toEqual([[INSERT, INSERT], [INSERT, INSERT, INSERT]]);
    expect(await labels()).toEqual(['one', 'two', 'first', 'last', 'first', 'second', 'last']);
  });

  it('undoes the first statement, sent with the BEGIN, when the transaction rolls back', async () => {
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 116, 'undone');
      throw new Rollback('rolled back');
    }));
    expect(m).toEqual({ outcome: 'rolled back', roundTrips: 2, statements: [INSERT, 'rollback'] });
    expect(await labels()).not.toContain('undone');
  });

  it('rolls everything back when the LastStatement fails (Postgres skips its COMMIT), and the connection goes on', async () => {
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 117, 'undone');
      await insertLast(trx, 1, 'duplicate');
    }));
    expect(m).toEqual({ outcome: expect.stringMatching(/duplicate key/), roundTrips: 3, statements: [INSERT, INSERT, 'rollback'] });
    expect(await labels()).not.toContain('undone');
    await oneRoundTrip();
  });

  it('rolls back a LastStatement that fails when sent with its BEGIN', async () => {
    const m = await measured((db) => db.transaction().execute((trx) => insertLast(trx, 1, 'duplicate')));
    expect(m).toEqual({ outcome: expect.stringMatching(/duplicate key/), roundTrips: 2, statements: [INSERT, 'rollback'] });
    await oneRoundTrip();
  });

  it('answers a COMMIT that fails (a deferred constraint) as the LastStatement’s error, nothing kept', async () => {
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 118, 'undone');
      await trx.executeQuery(new LastStatement('insert into refs (id, item_id) values ($1, $2)', [1, 999]));
    }));
    expect(m.outcome).toMatch(/violates foreign key constraint/);
    expect(await labels()).not.toContain('undone');
    expect(await service.db.selectFrom('refs').select('id').execute()).toEqual([]);
    await oneRoundTrip();
  });

  it('commits a LastStatement without parameters by a COMMIT of its own right after it', async () => {
    const text = "insert into items (id, label) values (119, 'raw')";
    expect(await measured((db) => db.transaction().execute((trx) => trx.executeQuery(new LastStatement(text, []))))).toEqual({ outcome: 'ok', roundTrips: 3, statements: [text, 'commit'] });
    expect(await labels()).toContain('raw');
  });

  it('runs statements given together one after the other (Kysely queues them), the last still carrying the COMMIT', async () => {
    const m = await measured((db) => db.transaction().execute((trx) => Promise.all([insert(trx, 120, 'first'), insertLast(trx, 121, 'last')])));
    expect(m).toEqual({ outcome: 'ok', roundTrips: 2, statements: [INSERT, INSERT] });
    expect(await labels()).toEqual(expect.arrayContaining(['first', 'last']));
  });

  it('sends nothing for a transaction that sent nothing, committed or rolled back, and the next one goes on as usual', async () => {
    expect(await measured((db) => db.transaction().execute(async () => 'nothing'))).toEqual({ outcome: 'ok', roundTrips: 0, statements: [] });
    expect(await measured((db) => db.transaction().execute(async () => {
      throw new Rollback('nothing either');
    }))).toEqual({ outcome: 'nothing either', roundTrips: 0, statements: [] });
    await oneRoundTrip();
  });

  it('gives a failing first statement, sent with its deferred BEGIN, its own error, and rolls back', async () => {
    const m = await measured((db) => db.transaction().execute((trx) => insert(trx, 1, 'duplicate')));
    expect(m).toEqual({ outcome: expect.stringMatching(/duplicate key/), roundTrips: 2, statements: [INSERT, 'rollback'] });
    await oneRoundTrip();
  });

  it('gives a failing first statement without parameters, sent after a BEGIN of its own, its error, and rolls back', async () => {
    const text = "insert into items (id, label) values (1, 'duplicate')";
    const m = await measured((db) => db.transaction().execute((trx) => trx.executeQuery(CompiledQuery.raw(text, []))));
    expect(m).toEqual({ outcome: expect.stringMatching(/duplicate key/), roundTrips: 3, statements: [text, 'rollback'] });
    await oneRoundTrip();
  });

  it('keeps a first statement without parameters inside the transaction (several statements in one text)', async () => {
    await expect(preparing.db.transaction().execute(async (trx) => {
      await sql`insert into items (id, label) values (122, 'raw'); insert into items (id, label) values (123, 'raw')`.execute(trx);
      expect(await trx.selectFrom('items').select('id').where('id', '>=', 122).execute()).toHaveLength(2);
      throw new Rollback();
    })).rejects.toBeInstanceOf(Rollback);
    expect(await labels()).not.toContain('raw');
  });

  it('keeps statements given together in a transaction in their order, all inside it', async () => {
    await expect(preparing.db.transaction().execute(async (trx) => {
      await Promise.all([124, 125, 126].map((id) => insert(trx, id, 'together')));
      throw new Rollback();
    })).rejects.toBeInstanceOf(Rollback);
    expect(await labels()).not.toContain('together');
  });

  it('begins a transaction with an isolation level or an access mode by a statement of its own', async () => {
    let isolation = '';
    const serializable = await measured((db) => db.transaction().setIsolationLevel('serializable').execute(async (trx) => {
      isolation = (await sql<{ transactionIsolation: string }>`show transaction_isolation`.execute(trx)).rows[0]!.transactionIsolation;
      await insertLast(trx, 127, 'serializable');
    }));
    expect({ isolation, ...serializable }).toEqual({ isolation: 'serializable', outcome: 'ok', roundTrips: 3, statements: ['start transaction isolation level serializable', 'show transaction_isolation', INSERT] });
    const readOnly = await measured((db) => db.transaction().setAccessMode('read only').execute((trx) => insert(trx, 128, 'refused')));
    expect(readOnly.outcome).toMatch(/read-only transaction/);
    expect(await labels()).toEqual(['one', 'two', 'serializable']);
  });
});

describe('controlled transactions and savepoints through the service driver', () => {
  it('begins a controlled transaction (an Idempotency-Key’s claim) with its first statement and ends it when told', async () => {
    const committed = await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await insert(trx, 130, 'committed');
      await trx.commit().execute();
    });
    const rolledBack = await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await insert(trx, 131, 'rolled back');
      await trx.rollback().execute();
    });
    expect([committed, rolledBack]).toEqual([
      { outcome: 'ok', roundTrips: 2, statements: [INSERT, 'commit'] },
      { outcome: 'ok', roundTrips: 2, statements: [INSERT, 'rollback'] },
    ]);
    expect(await labels()).toEqual(['one', 'two', 'committed']);
  });

  it('ends a controlled transaction that sent nothing without a word', async () => {
    expect(await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await trx.commit().execute();
    })).toEqual({ outcome: 'ok', roundTrips: 0, statements: [] });
  });

  it('commits a controlled transaction with its LastStatement, its commit then sending nothing', async () => {
    expect(await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await insert(trx, 132, 'first');
      await insertLast(trx, 133, 'last');
      await trx.commit().execute();
    })).toEqual({ outcome: 'ok', roundTrips: 2, statements: [INSERT, INSERT] });
    expect(await labels()).toEqual(expect.arrayContaining(['first', 'last']));
  });

  it('rolls back to a savepoint and releases one', async () => {
    const m = await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await insert(trx, 134, 'kept');
      const atA = await trx.savepoint('a').execute();
      await insert(atA, 135, 'undone');
      await atA.rollbackToSavepoint('a').execute();
      const atB = await trx.savepoint('b').execute();
      await insert(atB, 136, 'released');
      await atB.releaseSavepoint('b').execute();
      await trx.commit().execute();
    });
    expect(m.statements).toEqual([INSERT, 'savepoint "a"', INSERT, 'rollback to savepoint "a"', 'savepoint "b"', INSERT, 'release savepoint "b"', 'commit']);
    expect(await labels()).toEqual(['one', 'two', 'kept', 'released']);
  });

  it('takes a savepoint as a transaction’s first statement (no parameters: its BEGIN sent on its own), as a keyed effect does', async () => {
    const effect = async (trx: Transaction<Db>) => {
      await sql`savepoint effect`.execute(trx);
      await insert(trx, 137, 'undone');
      await sql`rollback to savepoint effect`.execute(trx);
      await insert(trx, 138, 'kept');
    };
    expect((await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await effect(trx);
      await trx.commit().execute();
    })).outcome).toBe('ok');
    expect(await labels()).toEqual(['one', 'two', 'kept']);
  });
});

describe('plain clients (DATABASE_PREPARED_STATEMENTS=false)', () => {
  it('commit the same transactions, BEGIN and COMMIT sent as statements of their own', async () => {
    expect(await measured((db) => db.transaction().execute((trx) => insertLast(trx, 140, 'plain')), plain)).toEqual({ outcome: 'ok', roundTrips: 3, statements: ['begin', INSERT, 'commit'] });
    expect(await measured((db) => db.transaction().execute(async () => 'nothing'), plain)).toEqual({ outcome: 'ok', roundTrips: 2, statements: ['begin', 'commit'] });
    expect(await labels()).toContain('plain');
  });

  it('roll everything back when the LastStatement fails', async () => {
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 141, 'undone');
      await insertLast(trx, 1, 'duplicate');
    }), plain);
    expect(m).toEqual({ outcome: expect.stringMatching(/duplicate key/), roundTrips: 4, statements: ['begin', INSERT, INSERT, 'rollback'] });
    expect(await labels()).not.toContain('undone');
  });

  it('run controlled transactions and savepoints', async () => {
    const m = await measured(async (db) => {
      const trx = await db.startTransaction().execute();
      await insert(trx, 142, 'kept');
      const atA = await trx.savepoint('a').execute();
      await insertLast(atA, 143, 'undone');
      await atA.rollbackToSavepoint('a').execute();
      await trx.commit().execute();
    }, plain);
    expect(m.statements).toEqual(['begin', INSERT, 'savepoint "a"', INSERT, 'rollback to savepoint "a"', 'commit']);
    expect(await labels()).toEqual(['one', 'two', 'kept']);
  });
});

describe('statements told apart by nothing but how the driver is asked', () => {
  it('runs a statement whose text begins with /* then commit */ as an ordinary one: others follow it, and a rollback undoes it', async () => {
    const marked = '/* then commit */ insert into items (id, label) values ($1, $2)';
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await trx.executeQuery(CompiledQuery.raw(marked, [150, 'marked']));
      await insert(trx, 151, 'after');
      throw new Rollback('rolled back');
    }));
    expect(m).toEqual({ outcome: 'rolled back', roundTrips: 3, statements: [marked, INSERT, 'rollback'] });
    expect(await labels()).toEqual(['one', 'two']);
  });

  it('sends a statement `commit` to Postgres like any other: Postgres commits there, and the driver still ends the transaction its own way', async () => {
    const m = await measured((db) => db.transaction().execute(async (trx) => {
      await insert(trx, 152, 'committed by the statement');
      await sql`commit`.execute(trx);
      throw new Rollback('rolled back');
    }));
    // The rollback finds no transaction (Postgres warns): what the statement committed stays.
    expect(m).toEqual({ outcome: 'rolled back', roundTrips: 3, statements: [INSERT, 'commit', 'rollback'] });
    expect(await labels()).toContain('committed by the statement');
  });
});
