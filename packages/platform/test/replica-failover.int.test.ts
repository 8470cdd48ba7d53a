import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { subjects, type IdempotencyContext } from '@aex/contracts';
import { callOperation, connectServiceDb, NatsBus, operationScope, type Bus, type ServiceDb, type Stoppable } from '../src/index.js';
import { createTestDatabase, eventually, TEST_NATS_URL, testNamespace, type TestDatabase } from '../src/testing/index.js';
import { migrations, ops, SCHEMA, serveReplica, type Behaviour, type Db } from './replica-kit.js';

// Real NATS and Postgres: two replicas of one service in one queue group, one of them a process of
// its own that hangs with a request in it and is killed with SIGKILL. What the caller hears
// (docs/idempotency.md "When a replica dies"; D5.4, D5.5): a read is answered by the other replica
// long before the timeout; a write whose effect the dying replica committed is answered with that
// outcome, applied once; one whose outcome cannot be learned yet is answered 202, never 503; a
// service with no replica at all is 503 at once.

const TIMEOUT_MS = 4_000;
const fixture = fileURLToPath(new URL('./fixtures/dying-replica.ts', import.meta.url));

let database: TestDatabase;
let service: ServiceDb<Db>;
let bus: NatsBus;
let namespace: string;
const stoppables: Stoppable[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  service = await connectServiceDb<Db>({ url: database.url, schema: SCHEMA, migrations });
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of stoppables.splice(0)) await s.stop();
  await bus?.destroyNamespace();
  await bus?.close();
});
afterAll(async () => {
  await service?.close();
  await database?.drop();
});

async function freshBus(): Promise<NatsBus> {
  namespace = testNamespace();
  bus = await NatsBus.connect(TEST_NATS_URL, namespace, 'failover-test');
  return bus;
}

/** The dying replica, in its own process; `events` are the lines it printed (`read`, `write`, `committed`). */
async function dyingReplica(behaviour: Behaviour, which: string): Promise<{ child: ChildProcess; events: string[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, namespace, database.url, behaviour, which], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const events: string[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    events.push(...lines);
  });
  await eventually(async () => events.includes('ready'), 90_000);
  return { child, events };
}

const killed = (child: ChildProcess) => new Promise<void>((resolve) => {
  child.once('exit', () => resolve());
  child.kill('SIGKILL');
});

/** Counts the copies of requests sent on the bus. */
function counting(b: Bus): { bus: Bus; sent: () => number } {
  let n = 0;
  const proxy = new Proxy(b, {
    get(target, prop, receiver) {
      if (prop === 'request') return (...args: Parameters<Bus['request']>) => (n++, target.request(...args));
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { bus: proxy, sent: () => n };
}

const read = (b: Bus) => callOperation(b, ops.probe, { ctx: { requestId: randomUUID(), principal: null }, input: { path: {}, query: {}, body: {} } }, { timeoutMs: TIMEOUT_MS });
const write = (b: Bus, value: number, idempotency: IdempotencyContext) =>
  callOperation(b, ops.record, { ctx: { requestId: randomUUID(), principal: null, idempotency }, input: { path: {}, query: {}, body: { value } } }, { timeoutMs: TIMEOUT_MS });
/** A key as the gateway makes one for a write sent without an Idempotency-Key. */
const madeKey = (): IdempotencyContext => ({ key: `aex-op-${randomUUID()}`, scope: operationScope('agent:a'), fingerprint: 'fp', firstCopy: true });
/** A client's Idempotency-Key. */
const clientKey = (): IdempotencyContext => ({ key: randomUUID(), scope: 'agent:a', fingerprint: 'fp' });
const effects = async (value: number) => service.db.selectFrom('effects').select(['replica']).where('value', '=', value).execute();
const timed = async <T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const start = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - start };
};

// A replica process starts in seconds, but in tens of them on a loaded machine.
describe('a replica that dies with requests in it', { timeout: 120_000 }, () => {
  it('a read another replica can answer is answered by it, hedged, well before the RPC timeout', async () => {
    await freshBus();
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers'));
    const dying = await dyingReplica('hangs-after-effect', 'probe');
    // Enough reads that the queue group gives some to the replica that never answers; it is killed
    // with them in it, and their next copies reach the live replica.
    const pending = Promise.all(Array.from({ length: 8 }, () => timed(() => read(bus))));
    await eventually(async () => dying.events.includes('read'), 10_000);
    await killed(dying.child);
    const answers = await pending;
    for (const a of answers) {
      expect(a.value).toMatchObject({ ok: true, data: { replica: 'alive' } });
      expect(a.ms).toBeLessThan(TIMEOUT_MS / 2);
    }
  });

  it('once a replica is killed its queue subscription takes nothing: every read goes to the live one at the first copy', async () => {
    await freshBus();
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers'));
    const dying = await dyingReplica('hangs-after-effect', 'probe');
    await killed(dying.child);
    const counted = counting(bus);
    const answers = await Promise.all(Array.from({ length: 20 }, () => read(counted.bus)));
    expect(answers.every((a) => a.ok && (a.data as { replica: string }).replica === 'alive')).toBe(true);
    expect(counted.sent()).toBe(20);
  });

  it('D5.5: a write whose effect the dying replica committed is answered with that outcome by the other, applied once', async () => {
    await freshBus();
    // The write can only reach the dying replica: the live one serves it only once that one took it.
    const dying = await dyingReplica('hangs-after-effect', 'probe,record');
    const pending = timed(() => write(bus, 501, madeKey()));
    await eventually(async () => dying.events.includes('committed'), 10_000);
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['record']));
    await killed(dying.child);
    const { value: reply, ms } = await pending;
    expect(reply).toMatchObject({ ok: true, status: 201, data: { replica: 'dying' } });
    expect(reply.replayed).toBeUndefined();
    expect(ms).toBeLessThan(TIMEOUT_MS + 1_000);
    expect(await effects(501)).toEqual([{ replica: 'dying' }]);
  });

  it('D5.5: a write the killed replica had not committed is run by the other when the gateway asks again, once', async () => {
    await freshBus();
    const dying = await dyingReplica('hangs-before-effect', 'probe,record');
    const pending = write(bus, 502, madeKey());
    await eventually(async () => dying.events.includes('write'), 10_000);
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['record']));
    // Its Postgres session ends with it, and with the session the claim of the key.
    await killed(dying.child);
    expect(await pending).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' } });
    expect(await effects(502)).toEqual([{ replica: 'alive' }]);
  });

  // In this process, on a connection and a pool of its own: its subscription is ended once it took
  // the write (cut off from NATS), its handler still running and its database still reachable.
  for (const [how, op, value] of [['through ctx.effect', 'record', 506], ['at commit', 'recordAtCommit', 604]] as const) {
    it(`D5.5: the first copy of a write stalled past the timeout fails on the key the repeat holds, its effect made ${how}: applied once, by the repeat`, async () => {
      await freshBus();
      const events: string[] = [];
      const stalledBus = await NatsBus.connect(TEST_NATS_URL, namespace, 'stalled-replica');
      const stalledDb = await connectServiceDb<Db>({ url: database.url, schema: SCHEMA, migrations });
      const stalled = await serveReplica(stalledBus, stalledDb, 'stalled', 'late-effect', [op], (e) => events.push(e));
      const pending = callOperation(bus, ops[op], { ctx: { requestId: randomUUID(), principal: null, idempotency: madeKey() }, input: { path: {}, query: {}, body: { value } } }, { timeoutMs: TIMEOUT_MS });
      await eventually(async () => events.includes('write'), 10_000);
      await stalled.stop();
      stoppables.push(await serveReplica(bus, service, 'alive', 'answers', [op]));
      expect(await pending).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' } });
      // Refused on the key's row, which the repeat holds: its effect rolled back.
      await eventually(async () => events.includes('effect-refused:IDEMPOTENCY_KEY_IN_USE'), 15_000);
      expect(events).not.toContain('committed');
      await stalledBus.close();
      await stalledDb.close();
      expect(await effects(value)).toEqual([{ replica: 'alive' }]);
    });
  }

  it('D5.4: a keyed write whose outcome cannot be learned in time is answered 202 saying so, and a repeat under its key later gives the one outcome', async () => {
    await freshBus();
    const dying = await dyingReplica('hangs-before-effect', 'probe,record');
    const key = clientKey();
    const pending = write(bus, 503, key);
    await eventually(async () => dying.events.includes('write'), 10_000);
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['record']));
    // The stalled replica holds the key's claim (frozen, not dead): the repeat cannot learn the outcome.
    const reply = await pending;
    expect(reply.status).toBe(202);
    expect(reply).toMatchObject({ ok: false, errors: [{ code: 'IDEMPOTENCY_KEY_IN_USE', details: { outcome: 'unknown' } }] });
    await killed(dying.child);
    const again = await write(bus, 503, key);
    expect(again).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' } });
    expect(await write(bus, 503, key)).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' } });
    expect(await effects(503)).toEqual([{ replica: 'alive' }]);
  });

  it('D9.9: a write without a key whose effect the dying replica committed is answered 202 with the outcome unknown, never 503', async () => {
    await freshBus();
    const dying = await dyingReplica('hangs-after-effect', 'probe,record');
    const pending = callOperation(bus, ops.record, { ctx: { requestId: randomUUID(), principal: null }, input: { path: {}, query: {}, body: { value: 507 } } }, { timeoutMs: TIMEOUT_MS });
    await eventually(async () => dying.events.includes('committed'), 10_000);
    await killed(dying.child);
    const reply = await pending;
    expect(reply.status).toBe(202);
    expect(reply).toMatchObject({ ok: false, errors: [{ code: 'SERVICE_UNAVAILABLE', details: { outcome: 'unknown' } }] });
    // What the answer would not hide: the effect is there.
    expect(await effects(507)).toEqual([{ replica: 'dying' }]);
  });

  it('a service with no replica answers 503 after a moment of asking again, not after the RPC timeout', async () => {
    await freshBus();
    const { value: readReply, ms: readMs } = await timed(() => read(bus));
    const { value: writeReply, ms: writeMs } = await timed(() => write(bus, 504, madeKey()));
    expect(readReply).toMatchObject({ ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE' }] });
    expect(writeReply).toMatchObject({ ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE' }] });
    expect(readMs).toBeLessThan(TIMEOUT_MS / 2);
    expect(writeMs).toBeLessThan(TIMEOUT_MS / 2);
    expect(await effects(504)).toEqual([]);
  });

  it('no responders while a replica restarts is asked again: a replica that comes within the moment answers', async () => {
    await freshBus();
    const pending = read(bus);
    await new Promise((r) => setTimeout(r, 300));
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['probe']));
    expect(await pending).toMatchObject({ ok: true, data: { replica: 'alive' } });
  });
});

// The record of a gateway-made key is kept in its own scope: a client's key of the same text finds nothing.
describe('operation keys the gateway makes', () => {
  it('live apart from client keys of the same text', async () => {
    await freshBus();
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['record']));
    const made = madeKey();
    expect(await write(bus, 505, made)).toMatchObject({ ok: true, status: 201 });
    const client = await write(bus, 505, { ...made, scope: 'agent:a' });
    expect(client).toMatchObject({ ok: true, status: 201 });
    expect(client.replayed).toBeUndefined();
    expect((await effects(505)).length).toBe(2);
    const kept = await sql<{ n: number }>`select count(*)::int as n from idempotency_keys where expires_at < now() + interval '2 hours'`.execute(service.db);
    expect(kept.rows[0]!.n).toBeGreaterThan(0);
    expect(subjects.rpc(namespace, 'wallet', 'record')).toContain(namespace);
  });
});

const writeAtCommit = (b: Bus, value: number, idempotency: IdempotencyContext) =>
  callOperation(b, ops.recordAtCommit, { ctx: { requestId: randomUUID(), principal: null, idempotency }, input: { path: {}, query: {}, body: { value } } }, { timeoutMs: TIMEOUT_MS });
/** The key of a made key's repeat: the gateway's own, or the client's with the key it was given. */
const repeatOf = (key: IdempotencyContext): IdempotencyContext => {
  const { firstCopy: _first, ...repeat } = key;
  return repeat;
};

// An effect made without ctx.effect — a step written at commit, a group commit — writes the made
// key's row in its own statement, without the answer, which follows when the request ends.
describe('a made key written with an effect made at commit', { timeout: 120_000 }, () => {
  it('D5.5: holds the request\'s answer once it ends: a repeat under the key gets it, applied once', async () => {
    await freshBus();
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['recordAtCommit']));
    const made = madeKey();
    const first = await writeAtCommit(bus, 601, made);
    expect(first).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' } });
    const again = await writeAtCommit(bus, 601, repeatOf(made));
    expect(again).toMatchObject({ ok: true, status: 201, data: { replica: 'alive' }, replayed: true });
    expect(again.meta).toEqual(first.meta);
    expect(await effects(601)).toEqual([{ replica: 'alive' }]);
  });

  it('D5.3: a refusal decided once the effect committed is the answer a repeat gets', async () => {
    await freshBus();
    stoppables.push(await serveReplica(bus, service, 'alive', 'refuses-after-effect', ['recordAtCommit']));
    const made = madeKey();
    expect(await writeAtCommit(bus, 602, made)).toMatchObject({ ok: false, status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }] });
    expect(await writeAtCommit(bus, 602, repeatOf(made))).toMatchObject({ ok: false, status: 402, errors: [{ code: 'INSUFFICIENT_FUNDS' }], replayed: true });
    expect(await effects(602)).toEqual([{ replica: 'alive' }]);
  });

  it('D5.4: the replica died between the commit and its answer: 202 unknown at first, then "applied" to a repeat, applied once', async () => {
    await freshBus();
    const dying = await dyingReplica('hangs-after-effect', 'probe,recordAtCommit');
    const made = madeKey();
    const pending = writeAtCommit(bus, 603, made);
    await eventually(async () => dying.events.includes('committed'), 10_000);
    // The live replica waits for an answer 3 × its RPC timeout (6 s, past the caller's 4 s) after the key's row was written.
    stoppables.push(await serveReplica(bus, service, 'alive', 'answers', ['recordAtCommit'], () => undefined, 2_000));
    await killed(dying.child);
    const reply = await pending;
    expect(reply).toMatchObject({ ok: false, status: 202, errors: [{ code: 'IDEMPOTENCY_KEY_IN_USE', details: { outcome: 'unknown' } }] });
    await eventually(async () => {
      const again = await writeAtCommit(bus, 603, repeatOf(made));
      return again.status === 202 && !again.ok && again.errors[0]!.code === 'SERVICE_UNAVAILABLE' && (again.errors[0]!.details as { outcome?: string }).outcome === 'applied';
    }, 15_000);
    expect(await effects(603)).toEqual([{ replica: 'dying' }]);
  });
});
