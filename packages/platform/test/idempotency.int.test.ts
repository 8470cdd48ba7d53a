import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Migration } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, isAppError, Type, type IdempotencyContext, type MessageDef, type RpcReply } from '@aex/contracts';
import {
  connectServiceDb, createPlatformTablesV1, createPlatformTablesV2, createPlatformTablesV3, IdempotencyRecords,
  Transactor, type EffectRunner, type HandOffTarget, type OutboxRow, type PlatformTables, type ServiceDb,
} from '../src/index.js';
import { openReply } from '../src/idempotency/reply-cipher.js';
import { createTestDatabase, eventually, TestClock, testLogger, type TestDatabase } from '../src/testing/index.js';

// D5.4 / D5.5 on real Postgres: the Idempotency-Key record is written in the transaction of the
// effect it guards, so effects happen exactly once per key whatever fails, and repeats get the
// first answer.

interface Db extends PlatformTables {
  effects: { id: string; value: number };
}

const migrations: Record<string, Migration> = {
  '0001': {
    async up(db) {
      await createPlatformTablesV1(db);
      await createPlatformTablesV2(db);
      await createPlatformTablesV3(db);
      await db.schema.createTable('effects').addColumn('id', 'uuid', (c) => c.primaryKey()).addColumn('value', 'integer', (c) => c.notNull()).execute();
    },
  },
};

let database: TestDatabase;
let service: ServiceDb<Db>;
let db: Kysely<Db>;
let tx: Transactor<Db>;
const logger = testLogger();
const records = (over: Partial<ConstructorParameters<typeof IdempotencyRecords>[0]> = {}) =>
  new IdempotencyRecords({ tx, claims: service.claims, ttlMs: 60_000, abandonAfterMs: 30_000, logger, ...over });

beforeAll(async () => {
  database = await createTestDatabase();
  service = await connectServiceDb<Db>({ url: database.url, schema: 'idemtest', migrations });
  db = service.db;
  // No relay: what the effects publish is not this file's subject.
  tx = new Transactor(db, null);
});
afterAll(async () => {
  await service?.close();
  await database?.drop();
});

const keyOf = (fingerprint = 'fp-1', scope = 'agent:a'): IdempotencyContext => ({ key: randomUUID(), scope, fingerprint });
const count = async (value: number) => (await db.selectFrom('effects').select(sql<number>`count(*)::int`.as('n')).where('value', '=', value).executeTakeFirstOrThrow()).n;

/** A handler whose effect inserts one row marked `value` and answers 201 with it. */
const inserting = (value: number, extra: Record<string, unknown> = {}) => async (effect: EffectRunner): Promise<RpcReply> => {
  const r = await effect(tx, async (trx) => {
    await trx.insertInto('effects').values({ id: randomUUID(), value }).execute();
    return { status: 201, data: { value, ...extra } };
  });
  return { ok: true, status: r.status ?? 200, data: r.data };
};

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
};

describe('D5.5 exactly-once effects at the owner', () => {
  it('applies the effect once and answers every repeat with the first answer, marked replayed', async () => {
    const r = records();
    const key = keyOf();
    const first = await r.run(key, 'req-1', inserting(101));
    const second = await r.run(key, 'req-2', inserting(101));
    const third = await r.run(key, 'req-3', inserting(101));
    expect(first).toMatchObject({ ok: true, status: 201, data: { value: 101 }, meta: { requestId: 'req-1' } });
    expect(second).toEqual({ ...first, replayed: true });
    expect(third).toEqual({ ...first, replayed: true });
    expect(await count(101)).toBe(1);
  });

  it('does what follows the commit again before a repeat is answered from the key, never on the first run or another request', async () => {
    const [r, key, calls] = [records(), keyOf(), [] as string[]];
    const run = (requestId: string, fingerprint = key.fingerprint) => r.run({ ...key, fingerprint }, requestId, inserting(130), async () => void calls.push(requestId));
    expect([await run('first'), await run('repeat'), await run('other', 'fp-other')]).toMatchObject([{ status: 201 }, { status: 201, replayed: true }, { status: 422 }]);
    expect([calls, await count(130)]).toEqual([['repeat'], 1]);
  });

  it('runs a request without a key every time', async () => {
    const r = records();
    await r.run(undefined, 'a', inserting(102));
    await r.run(undefined, 'b', inserting(102));
    expect(await count(102)).toBe(2);
  });

  it('answers another request under the same key with 422 IDEMPOTENCY_KEY_REUSED and applies nothing', async () => {
    const r = records();
    const key = keyOf('fp-a');
    await r.run(key, 'req', inserting(103));
    const other = await r.run({ ...key, fingerprint: 'fp-b' }, 'req', inserting(103));
    expect(other).toMatchObject({ ok: false, status: 422, errors: [{ code: 'IDEMPOTENCY_KEY_REUSED' }] });
    expect(await count(103)).toBe(1);
  });

  it('keeps keys of different scopes apart', async () => {
    const r = records();
    const key = keyOf();
    await r.run(key, 'req', inserting(104));
    await r.run({ ...key, scope: 'agent:b' }, 'req', inserting(104));
    expect(await count(104)).toBe(2);
  });

  it('answers a repeat while the first still runs with 409 IDEMPOTENCY_KEY_IN_USE, then the first answer', async () => {
    const r = records();
    const key = keyOf();
    const [g, claimed] = [gate(), gate()];
    const first = r.run(key, 'first', async (effect) => {
      claimed.open();
      await g.opened;
      return inserting(105)(effect);
    });
    await claimed.opened;
    expect(await r.run(key, 'repeat', inserting(105))).toMatchObject({ status: 409, errors: [{ code: 'IDEMPOTENCY_KEY_IN_USE', details: { retryAfterSeconds: 1 } }] });
    g.open();
    const answer = await first;
    expect(await r.run(key, 'later', inserting(105))).toEqual({ ...answer, replayed: true });
    expect(await count(105)).toBe(1);
  });

  it('frees the key of a request whose process died before its effect: the retry applies it once', async () => {
    const r = records();
    const key = keyOf();
    const [g, claimed] = [gate(), gate()];
    const dead = r.run(key, 'dies', async (effect) => {
      claimed.open();
      await g.opened;
      try {
        return await inserting(106)(effect);
      } catch (err) {
        return { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: (err as Error).message }] };
      }
    });
    await claimed.opened;
    // The process holding the claim is gone: Postgres ends its session, and its claim with it.
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ ended: boolean }>(
        `select pg_terminate_backend(pid, 5000) as ended from pg_stat_activity
          where datname = $1 and application_name = 'aex-idemtest-keyed' and state like 'idle in transaction%'`,
        [database.name],
      );
      expect(rows.map((row) => row.ended)).toEqual([true]);
    } finally {
      await admin.end();
    }
    const retry = await r.run(key, 'retry', inserting(106));
    expect(retry).toMatchObject({ ok: true, status: 201 });
    g.open();
    // Had the first process lived on, its effect could not commit any more: the claim it held is gone.
    expect(await dead).toMatchObject({ ok: false, status: 500 });
    expect(await count(106)).toBe(1);
  });

  it('undoes the effect when its transaction fails, and stores the refusal as the key’s answer', async () => {
    const r = records();
    const key = keyOf();
    const refusing = async (effect: EffectRunner): Promise<RpcReply> => {
      try {
        await effect(tx, async (trx) => {
          await trx.insertInto('effects').values({ id: randomUUID(), value: 107 }).execute();
          throw new AppError('INSUFFICIENT_FUNDS', 'Not enough.');
        });
        return { ok: true, status: 200, data: null };
      } catch (err) {
        return { ok: false, status: (err as AppError).status, errors: (err as AppError).entries };
      }
    };
    expect(await r.run(key, 'x', refusing)).toMatchObject({ status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }] });
    expect(await r.run(key, 'y', inserting(107))).toMatchObject({ status: 402, replayed: true });
    expect(await count(107)).toBe(0);
  });

  it('answers with the committed answer when the handler fails after its effect', async () => {
    const r = records();
    const key = keyOf();
    const failsAfter = async (effect: EffectRunner): Promise<RpcReply> => {
      await inserting(108)(effect);
      return { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: 'later step failed' }] };
    };
    const answer = await r.run(key, 'x', failsAfter);
    expect(answer).toMatchObject({ ok: true, status: 201, data: { value: 108 } });
    expect(await r.run(key, 'y', inserting(108))).toEqual({ ...answer, replayed: true });
    expect(await count(108)).toBe(1);
  });

  it('replaces a provisional answer by the final one (a saga’s 202 becoming 201)', async () => {
    const r = records();
    const key = keyOf();
    const answer = await r.run(key, 'x', async (effect) => {
      const provisional = await effect(tx, async (trx) => {
        await trx.insertInto('effects').values({ id: randomUUID(), value: 109 }).execute();
        return { status: 202, data: { value: 109 } };
      });
      return { ok: true, status: 201, data: provisional.data };
    });
    expect(answer.status).toBe(201);
    expect(await r.run(key, 'y', inserting(109))).toEqual({ ...answer, replayed: true });
  });

  it('never stores 401 or 429: the key stays free (D5.4)', async () => {
    const r = records();
    const key = keyOf();
    for (const status of [401, 429]) {
      const code = status === 401 ? 'UNAUTHENTICATED' : 'RATE_LIMITED';
      expect(await r.run(key, 'x', async () => ({ ok: false, status, errors: [{ code, message: 'no' }] }))).toMatchObject({ status });
    }
    expect(await r.run(key, 'y', inserting(110))).toMatchObject({ status: 201 });
    expect(await count(110)).toBe(1);
  });

  it('D5.4: never stores a 503 given before any effect (a dependency did not answer): a repeat under the key runs', async () => {
    const r = records();
    const key = keyOf();
    const down = await r.run(key, 'x', async () => ({ ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'The identity service did not answer in time.' }] }));
    expect(down).toMatchObject({ status: 503 });
    expect(down.replayed).toBeUndefined();
    expect(await r.run(key, 'y', inserting(190))).toMatchObject({ status: 201 });
    expect(await r.run(key, 'z', inserting(190))).toMatchObject({ status: 201, replayed: true });
    expect(await count(190)).toBe(1);
  });

  it('stores a 5xx answer like any other final answer (D5.4)', async () => {
    const r = records();
    const key = keyOf();
    await r.run(key, 'x', async () => ({ ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: 'boom' }] }));
    expect(await r.run(key, 'y', inserting(111))).toMatchObject({ status: 500, replayed: true });
    expect(await count(111)).toBe(0);
  });

  it('stores no readable answer: the reply is sealed with the key, and nothing else opens it', async () => {
    const r = records();
    const key = keyOf();
    const secret = `ae_live_${randomUUID()}`;
    await r.run(key, 'x', inserting(112, { apiKey: secret }));
    const rows = await db.selectFrom('idempotencyKeys').select(['keyHash', 'reply']).execute();
    expect(rows.some((row) => row.keyHash === key.key || row.keyHash.includes(key.key))).toBe(false);
    const sealed = rows.map((row) => row.reply!).find((b) => openReply(key.scope, key.key, b) !== null)!;
    expect(sealed.toString('latin1')).not.toContain(secret);
    expect(openReply(key.scope, key.key, sealed)).toContain(secret);
    expect(openReply(key.scope, randomUUID(), sealed)).toBeNull();
    expect(openReply('anonymous:POST /v1/accounts:203.0.113.9', key.key, sealed)).toBeNull();
  });

  it('forgets answers past their retention (D5.2) and prunes them', async () => {
    const clock = new TestClock();
    const r = records({ ttlMs: 60_000, now: clock.now });
    const key = keyOf('fp-retention');
    const stored = () => db.selectFrom('idempotencyKeys').select('keyHash').where('fingerprint', '=', 'fp-retention').execute();
    await r.run(key, 'x', inserting(113));
    clock.advance(59_000);
    expect(await r.run(key, 'y', inserting(113))).toMatchObject({ status: 201, meta: { requestId: 'x' }, replayed: true });
    clock.advance(2_000);
    expect(await r.run(key, 'z', inserting(113))).toMatchObject({ status: 201, meta: { requestId: 'z' } });
    expect(await count(113)).toBe(2);
    await r.prune();
    expect(await stored()).toHaveLength(1);
    clock.advance(61_000);
    expect(await r.prune()).toBeGreaterThanOrEqual(1);
    expect(await stored()).toEqual([]);
  });

  it('gives up the claim of a handler stuck before its effect; its late effect applies nothing', async () => {
    const r = records({ abandonAfterMs: 150 });
    const key = keyOf();
    const [g, claimed] = [gate(), gate()];
    const stuck = r.run(key, 'stuck', async (effect) => {
      claimed.open();
      await g.opened;
      try {
        return await inserting(114)(effect);
      } catch (err) {
        return { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: (err as Error).message }] };
      }
    });
    await claimed.opened;
    // Given up by its own timer (`abandonAfterMs`): a retry answers 409 until then, and applies nothing.
    await eventually(async () => {
      const retry = await r.run(key, 'retry', inserting(114));
      return retry.status === 201 ? retry : null;
    });
    g.open();
    expect(await stuck).toMatchObject({ status: 500 });
    expect(await count(114)).toBe(1);
  });

  it('keeps exactly one effect per key when many repeats race', async () => {
    const r = records();
    const key = keyOf();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => r.run(key, `race-${i}`, inserting(115))));
    expect(await count(115)).toBe(1);
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
    expect(await r.run(key, 'after', inserting(115))).toMatchObject({ status: 201, replayed: true });
  });
});

describe('a keyed request’s effects', () => {
  const Noted = Type.Object({ value: Type.Integer() });
  const noted: MessageDef<typeof Noted> = { kind: 'event', owner: 'identity', type: 'test.noted', data: Noted };
  /** The service's transactions with a relay that keeps what it is handed. */
  const relayed = () => {
    const handed: OutboxRow[] = [];
    const relay: HandOffTarget = { running: true, handOff: (rows) => void handed.push(...rows) };
    return { handed, tx: new Transactor(db, relay) };
  };
  const refusal = (err: unknown): RpcReply => {
    if (!isAppError(err)) throw err;
    return { ok: false, status: err.status, errors: err.entries };
  };

  it('hands what the effect enqueued to the relay once the key’s transaction commits, and runs its callbacks then', async () => {
    const { handed, tx: relaying } = relayed();
    const ran: string[] = [];
    await records().run(keyOf(), 'x', async (effect) => {
      await effect(relaying, async (_trx, work) => {
        work.enqueue(noted, { value: 116 });
        work.afterCommit(() => ran.push('after commit'));
        return { data: null };
      });
      expect({ handed: handed.length, ran }).toEqual({ handed: 1, ran: ['after commit'] });
      return { ok: true, status: 200, data: null };
    });
    expect(handed.map((row) => row.envelope.data)).toEqual([{ value: 116 }]);
    expect(await db.selectFrom('outbox').select('id').where('id', '=', handed[0]!.id).execute()).toHaveLength(1);
  });

  it('keeps nothing the effect enqueued when it throws, and runs none of its callbacks', async () => {
    const { handed, tx: relaying } = relayed();
    const ran: string[] = [];
    const answer = await records().run(keyOf(), 'x', async (effect) => {
      try {
        return await effect(relaying, async (trx, work) => {
          await trx.insertInto('effects').values({ id: randomUUID(), value: 117 }).execute();
          work.enqueue(noted, { value: 117 });
          work.afterCommit(() => ran.push('after commit'));
          throw new AppError('INSUFFICIENT_FUNDS', 'Not enough.');
        }).then(() => ({ ok: true, status: 200, data: null }));
      } catch (err) {
        return refusal(err);
      }
    });
    expect(answer).toMatchObject({ status: 402 });
    expect({ handed, ran, effects: await count(117) }).toEqual({ handed: [], ran: [], effects: 0 });
  });

  it('makes a second effect in a transaction of its own, whose refusal becomes the stored answer, committed with what it wrote', async () => {
    const r = records();
    const key = keyOf();
    const answer = await r.run(key, 'x', async (effect) => {
      await effect(tx, async (trx) => {
        await trx.insertInto('effects').values({ id: randomUUID(), value: 118 }).execute();
        return { status: 202, data: { value: 118 } };
      });
      try {
        await effect(tx, async (trx) => {
          await trx.insertInto('effects').values({ id: randomUUID(), value: 119 }).execute();
          throw new AppError('INSUFFICIENT_FUNDS', 'The hold was refused.');
        });
        return { ok: true, status: 200, data: null };
      } catch (err) {
        return refusal(err);
      }
    });
    expect(answer).toMatchObject({ ok: false, status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }] });
    expect(await r.run(key, 'y', inserting(118))).toMatchObject({ status: 402, replayed: true });
    expect({ first: await count(118), second: await count(119) }).toEqual({ first: 1, second: 1 });
  });

  it('refuses an effect given another database’s transactions, applying nothing', async () => {
    const other = await connectServiceDb<Db>({ url: database.url, schema: 'idemother', migrations });
    try {
      const answer = await records().run(keyOf(), 'x', async (effect) => {
        try {
          await effect(new Transactor(other.db, null), async (trx) => {
            await trx.insertInto('effects').values({ id: randomUUID(), value: 120 }).execute();
            return { data: null };
          });
          return { ok: true, status: 200, data: null };
        } catch (err) {
          return { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: (err as Error).message }] };
        }
      });
      expect(answer).toMatchObject({ status: 500, errors: [{ message: 'ctx.effect must be given the service database' }] });
      expect(await other.db.selectFrom('effects').select('id').execute()).toEqual([]);
    } finally {
      await other.close();
    }
  });
});
