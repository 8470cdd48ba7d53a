import { randomUUID } from 'node:crypto';
import { sql, type Migration } from 'kysely';
import { AppError, Empty, Strict, Type, type Operation } from '@aex/contracts';
import {
  createPlatformTablesV1, createPlatformTablesV2, createPlatformTablesV3, groupCommitted, Transactor, serveOperations,
  type Bus, type OperationHandler, type PlatformTables, type ServiceDb, type Stoppable,
} from '../src/index.js';
import { testLogger } from '../src/testing/index.js';

// Two replicas of one service, for the tests of what a caller hears when one of them dies with a
// request in it (replica-failover.int.test.ts): the operations, the schema, and how a replica serves
// them — answering, or (the replica that dies) hanging before or after its effect.

export interface Db extends PlatformTables {
  effects: { id: string; value: number; replica: string };
}

export const SCHEMA = 'replicatest';

export const migrations: Record<string, Migration> = {
  '0001': {
    async up(db) {
      await createPlatformTablesV1(db);
      await createPlatformTablesV2(db);
      await createPlatformTablesV3(db);
      await db.schema.createTable('effects').addColumn('id', 'uuid', (c) => c.primaryKey()).addColumn('value', 'integer', (c) => c.notNull()).addColumn('replica', 'text', (c) => c.notNull()).execute();
    },
  },
};

const Answer = Strict({ replica: Type.String() });
const ValueBody = Strict({ value: Type.Integer() });
const input = <B extends ReturnType<typeof Strict>>(body: B) => Strict({ path: Empty, query: Empty, body });

export const ops = {
  probe: { service: 'wallet', name: 'probe', auth: 'none', input: input(Empty), output: Answer, effect: false } as Operation<ReturnType<typeof input>, typeof Answer>,
  record: { service: 'wallet', name: 'record', auth: 'none', input: input(ValueBody), output: Answer, effect: true } as Operation<ReturnType<typeof input>, typeof Answer> & { effect: true },
  /** A write whose effect is made as the aggregate runner's step at commit is: not through `ctx.effect`. */
  recordAtCommit: { service: 'wallet', name: 'recordAtCommit', auth: 'none', input: input(ValueBody), output: Answer, effect: true } as Operation<ReturnType<typeof input>, typeof Answer> & { effect: true },
};

/**
 * How a replica serves: `answers`; or it hangs on reads, and on writes before or after committing
 * their effect; or it refuses a write once its effect committed (a saga step that refused).
 */
export type Behaviour = 'answers' | 'hangs-before-effect' | 'hangs-after-effect' | 'late-effect' | 'refuses-after-effect';

/** How long a `late-effect` replica stalls before its effect: past the callers' timeout. */
export const LATE_MS = 6_000;

const forever = () => new Promise<never>(() => undefined);

export async function serveReplica(
  bus: Bus, service: ServiceDb<Db>, replica: string, behaviour: Behaviour, which: Array<keyof typeof ops> = ['probe', 'record'], onEvent: (e: string) => void = () => undefined, rpcTimeoutMs = 10_000,
): Promise<Stoppable> {
  const tx = new Transactor(service.db, null);
  const probe: OperationHandler<typeof ops.probe> = async () => {
    onEvent('read');
    if (behaviour !== 'answers') await forever();
    return { data: { replica } };
  };
  const record = (async ({ body }, ctx) => {
    onEvent('write');
    if (behaviour === 'hangs-before-effect') await forever();
    if (behaviour === 'late-effect') await new Promise((r) => setTimeout(r, LATE_MS));
    const reply = await ctx.effect(tx, async (trx) => {
      await trx.insertInto('effects').values({ id: randomUUID(), value: (body as { value: number }).value, replica }).execute();
      return { status: 201, data: { replica } };
    }).catch((err: unknown) => {
      onEvent(`effect-refused:${(err as { entries?: Array<{ code: string }> }).entries?.[0]?.code ?? 'other'}`);
      throw err;
    });
    onEvent('committed');
    if (behaviour === 'hangs-after-effect') await forever();
    return reply;
  }) as OperationHandler<typeof ops.record>;
  const recordAtCommit = (async ({ body }, ctx) => {
    onEvent('write');
    if (behaviour === 'hangs-before-effect') await forever();
    if (behaviour === 'late-effect') await new Promise((r) => setTimeout(r, LATE_MS));
    const value = (body as { value: number }).value;
    if (ctx.keyed) {
      // Under a key the request claimed (a client's, a made key's repeat), as the runner does: in the key's transaction.
      const reply = await ctx.effect(tx, async (trx) => {
        await trx.insertInto('effects').values({ id: randomUUID(), value, replica }).execute();
        return { status: 201, data: { replica } };
      });
      onEvent('committed');
      return reply;
    }
    // The effect as a step at commit writes it: one statement with the commit, the key's row in it.
    const written = await tx.runWriting(async (_trx, work) => {
      work.write((w) => sql`insert into effects (id, value, replica) select ${randomUUID()}::uuid, ${value}::integer, ${replica}::text where ${w}`);
      ctx.operationRecord?.atCommit(work);
      return { value: undefined, write: null };
    }).catch((err: unknown) => {
      onEvent(`effect-refused:${(err as { code?: string }).code === '23505' ? 'IDEMPOTENCY_KEY_IN_USE' : 'other'}`);
      throw err;
    });
    if (!written.written) throw new Error('the step wrote nothing');
    onEvent('committed');
    if (behaviour === 'hangs-after-effect') await forever();
    if (behaviour === 'refuses-after-effect') throw new AppError('INSUFFICIENT_FUNDS', 'refused once the effect committed');
    return groupCommitted(ctx, { status: 201, data: { replica } });
  }) as OperationHandler<typeof ops.recordAtCommit>;
  const chosen = Object.fromEntries(which.map((k) => [k, ops[k]])) as typeof ops;
  const handlers = { probe, record, recordAtCommit } as const;
  return serveOperations({
    bus, service: 'wallet', ops: chosen, handlers: Object.fromEntries(which.map((k) => [k, handlers[k]])) as typeof handlers,
    logger: testLogger(), tx, claims: service.claims, config: { IDEMPOTENCY_TTL_HOURS: 1, RPC_TIMEOUT_MS: rpcTimeoutMs },
  });
}
