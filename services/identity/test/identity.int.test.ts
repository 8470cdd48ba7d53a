import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_CACHE, commands, hashApiKey, events, identityOps, subjects, transactionOutcome, type MessageEnvelope, type Principal } from '@aex/contracts';
import pg from 'pg';
import { sql } from 'kysely';
import { ack, callOperation, callOrThrow, connectServiceDb, loadConfig, type Bus, type BusMessage, type ExchangeConfig } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '@aex/platform/testing';
import { startWalletService } from '@aex/wallet';
import { startIdentityService, type IdentityService } from '../src/index.js';
import { outcomeInput, trustScore } from '../src/domain/trust.js';
import { database as database_ } from '../src/db/migrations/index.js';
import { scoreUnchangedSql } from '../src/trust/outcomes.js';
import type { Database } from '../src/db/schema.js';

// The identity service alone on real Postgres and JetStream, driven over its bus operations and
// observed through the messages it publishes (no gateway, no wallet service).

let database: TestDatabase;
let bus: Bus;
let dispose: () => Promise<void>;
let config: ExchangeConfig;
let identity: IdentityService;
const seen: BusMessage[] = [];
const logger = testLogger();

beforeAll(async () => {
  database = await createTestDatabase();
  ({ bus, dispose } = await createTestBus('jetstream'));
  config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, SAGA_WAIT_MS: '200', PUBLIC_BASE_URL: 'https://ex.example' });
  identity = await startIdentityService({ bus, databaseUrl: database.url, config, logger });
  for (const stream of ['events', 'commands'] as const) {
    await bus.consume({ stream, durable: `observer-${stream}`, filter: `${bus.namespace}.${stream === 'events' ? 'evt' : 'cmd'}.>`, handler: async (m) => (seen.push(m), ack()) });
  }
});
afterAll(async () => {
  await identity?.stop();
  await dispose?.();
  await database?.drop();
});

const ctx = (principal: Principal | null = null) => ({ requestId: randomUUID(), principal, admin: false });
const hash = hashApiKey;
const authenticateKey = (key: string) => callOrThrow(bus, identityOps.authenticate, { ctx: ctx(), input: { path: {}, query: {}, body: { keyHash: hash(key) } } }, 5000);
const envelopes = (type: string) => seen.map((m) => m.data as MessageEnvelope<Record<string, unknown>>).filter((e) => e.type === type);

async function signUp() {
  const reply = await callOperation(bus, identityOps.createAccount, { ctx: ctx(), input: { path: {}, query: {}, body: { accountType: 'individual', email: `${randomUUID()}@example.com`, displayName: 'x', agent: { name: 'owner' } } } }, { timeoutMs: 5000 });
  if (!reply.ok) throw new Error(JSON.stringify(reply.errors));
  const principal = await authenticateKey(reply.data.apiKey);
  return { reply, principal: principal! };
}

describe('account creation saga (identity side)', () => {
  it('commits the agent with an openWallet command and an agent.created event, and answers 202 while no wallet service confirms', async () => {
    const { reply } = await signUp();
    expect(reply.status).toBe(202);
    const agentId = reply.data.agent.id;
    await eventually(async () => envelopes(commands.openWallet.type).some((e) => e.data.agentId === agentId));
    const cmd = envelopes(commands.openWallet.type).find((e) => e.data.agentId === agentId)!;
    expect(cmd.data).toEqual({ operationId: agentId, agentId, accountId: reply.data.id });
    const created = await eventually(async () => envelopes(events.agentCreated.type).find((e) => e.data.agentId === agentId));
    expect(created.data).toMatchObject({ agentId, accountId: reply.data.id, name: 'owner', status: 'active', trustScore: 50 });
  });

  it('records wallet.opened exactly once, even when it arrives twice', async () => {
    const { reply } = await signUp();
    const agentId = reply.data.agent.id;
    const env = { id: randomUUID(), type: events.walletOpened.type, occurredAt: new Date().toISOString(), data: { operationId: agentId, agentId, walletId: randomUUID() } };
    const subject = subjects.event(bus.namespace, events.walletOpened.type);
    await bus.publish(subject, env, { msgId: env.id });
    await bus.publish(subject, env, { msgId: randomUUID() });
    await eventually(async () => {
      const row = await identity.deps.db.selectFrom('agents').select('walletOpenedAt').where('id', '=', agentId).executeTakeFirst();
      return row?.walletOpenedAt;
    });
    const processed = await identity.deps.db.selectFrom('processedMessages').selectAll().where('messageId', '=', env.id).execute();
    expect(processed).toHaveLength(1);
  });

  it('gives every new agent a trust score of 50', async () => {
    const { reply } = await signUp();
    const row = await identity.deps.db.selectFrom('trustScores').selectAll().where('agentId', '=', reply.data.agent.id).executeTakeFirstOrThrow();
    expect(row.score).toBe(50);
  });

  it('stores only a hash of the API key', async () => {
    const { reply } = await signUp();
    const rows = await identity.deps.db.selectFrom('apiKeys').selectAll().where('agentId', '=', reply.data.agent.id).execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(reply.data.apiKey);
    expect(rows[0]!.keyHash).toBe(hash(reply.data.apiKey));
  });
});

describe('keys and the gateway cache (D2.5)', () => {
  it('authenticates an active key, then not after rotation, and marks the old key stale in the shared cache', async () => {
    const { reply, principal } = await signUp();
    expect(principal).toMatchObject({ agentId: reply.data.agent.id, accountId: reply.data.id, isOwner: true, status: 'active', signingKeyPublic: null });
    const rotated = await callOrThrow(bus, identityOps.rotateKey, { ctx: ctx(principal), input: { path: { agentId: principal.agentId }, query: {}, body: {} } }, 5000);
    const old = await authenticateKey(reply.data.apiKey);
    expect(old).toBeNull();
    const cache = await bus.kv(AUTH_CACHE.bucket(bus.namespace), { ttlMs: AUTH_CACHE.ttlMs });
    expect((await cache.get(hash(reply.data.apiKey)))?.value).toBe(AUTH_CACHE.staleMarker);
    const fresh = await authenticateKey(rotated.apiKey);
    expect(fresh?.agentId).toBe(principal.agentId);
    const announced = await eventually(async () => envelopes(events.agentKeyRotated.type).find((e) => e.data.agentId === principal.agentId));
    expect(announced.data).toEqual({ agentId: principal.agentId, keyPrefix: rotated.keyPrefix });
  });

  it('marks the key stale again when a change is answered from its key (the replica that committed it may have died before telling the caches)', async () => {
    const { reply, principal } = await signUp();
    const cache = await bus.kv(AUTH_CACHE.bucket(bus.namespace), { ttlMs: AUTH_CACHE.ttlMs });
    const keyHash = hash(reply.data.apiKey);
    const idempotency = { key: randomUUID(), scope: `agent:${principal.agentId}`, fingerprint: 'patch-description' };
    const patch = () => callOperation(bus, identityOps.updateAgent, { ctx: { ...ctx(principal), idempotency }, input: { path: { agentId: principal.agentId }, query: {}, body: { description: 'changed' } } }, { timeoutMs: 5000 });
    expect(await patch()).toMatchObject({ ok: true, status: 200 });
    // As if the replica had died between its commit and the marker: the principal from before is cached.
    await cache.put(keyHash, JSON.stringify(principal));
    const again = await patch();
    expect(again).toMatchObject({ ok: true, status: 200, data: { description: 'changed' } });
    expect((await cache.get(keyHash))?.value).toBe(AUTH_CACHE.staleMarker);
  });

  it('refuses to run an operation that needs an agent without one', async () => {
    const r = await callOperation(bus, identityOps.getAccount, { ctx: ctx(), input: { path: { accountId: randomUUID() }, query: {}, body: {} } }, { timeoutMs: 5000 });
    expect(!r.ok && r.status).toBe(401);
  });
});

describe('agent lifecycle events', () => {
  it('publishes agent.status_changed with the previous status on deactivation', async () => {
    const { principal } = await signUp();
    const created = await callOrThrow(bus, identityOps.createAgent, { ctx: ctx(principal), input: { path: {}, query: {}, body: { name: 'w', agentType: 'persistent' } } }, 5000);
    await callOrThrow(bus, identityOps.deactivateAgent, { ctx: ctx(principal), input: { path: { agentId: created.id }, query: {}, body: {} } }, 5000);
    await eventually(async () => envelopes(events.agentStatusChanged.type).some((e) => e.data.agentId === created.id));
    const evt = envelopes(events.agentStatusChanged.type).find((e) => e.data.agentId === created.id)!;
    expect(evt.data).toMatchObject({ status: 'deactivated', previousStatus: 'active', accountId: principal.accountId });
  });
});

describe('trust outcomes (D15.2)', () => {
  const outcome = (agentId: string, i: number) => ({
    transactionId: randomUUID(), providerAgentId: agentId, outcome: (['settled', 'settled', 'failed', 'expired'] as const)[i % 4]!,
    qualityScore: i % 4 === 0 ? 10 + i : null, late: i % 3 === 0, at: new Date().toISOString(),
  });

  it('keeps the sums of every outcome on the score row, each counted once, when many arrive at once', async () => {
    const { reply } = await signUp();
    const agentId = reply.data.agent.id;
    const outcomes = Array.from({ length: 24 }, (_, i) => outcome(agentId, i));
    const subject = subjects.event(bus.namespace, transactionOutcome.type);
    // Each published twice under different message ids: the second is a repetition of the outcome.
    await Promise.all(outcomes.flatMap((data) => [0, 1].map(() => {
      const env = { id: randomUUID(), type: transactionOutcome.type, occurredAt: data.at, data };
      return bus.publish(subject, env, { msgId: env.id });
    })));
    const inputs = outcomes.map(outcomeInput);
    const weightedValue = inputs.reduce((s, i) => s + i.value * i.halfWeights, 0);
    const halfWeights = inputs.reduce((s, i) => s + i.halfWeights, 0);
    const row = await eventually(async () => {
      const r = await identity.deps.db.selectFrom('trustScores').selectAll().where('agentId', '=', agentId).executeTakeFirstOrThrow();
      const processed = await identity.deps.db.selectFrom('processedMessages').select((eb) => eb.fn.countAll<number>().as('n')).where('consumer', '=', 'identity-trust-outcomes').executeTakeFirstOrThrow();
      return Number(r.halfWeights) === halfWeights && Number(processed.n) >= 48 ? r : null;
    }, 10_000);
    expect({ weightedValue: Number(row.weightedValue), halfWeights: Number(row.halfWeights) }).toEqual({ weightedValue, halfWeights });
    expect(row.score).toBe(trustScore({ weightedValue, halfWeights }));
    const kept = await identity.deps.db.selectFrom('trustOutcomes').select('transactionId').where('agentId', '=', agentId).execute();
    expect(kept).toHaveLength(24);
  });

  it('keeps an outcome that leaves the score as it was in one statement, with its record and the commit; a changed score is written and published', async () => {
    const agentId = (await signUp()).reply.data.agent.id;
    // Every statement the identity service sends that keeps an outcome of this test, by transaction id.
    const statements = new Map<string, string[]>();
    const query = pg.Client.prototype.query;
    const spy = function (this: pg.Client, ...args: unknown[]) {
      const q = args[0] as string | { text: string; values?: unknown[] };
      const text = typeof q === 'string' ? q : q.text;
      const values = (typeof q === 'string' ? args[1] : q.values) as unknown[] | undefined;
      const id = values?.find((v) => typeof v === 'string' && statements.has(v)) as string | undefined;
      if (id && /trust_outcome(s|_kept)\b/.test(text)) statements.get(id)!.push(text);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    };
    pg.Client.prototype.query = spy as typeof query;
    try {
      const subject = subjects.event(bus.namespace, transactionOutcome.type);
      const send = async (data: ReturnType<typeof outcome>) => {
        statements.set(data.transactionId, []);
        const env = { id: randomUUID(), type: transactionOutcome.type, occurredAt: data.at, data };
        await bus.publish(subject, env, { msgId: env.id });
        await eventually(async () => (await identity.deps.db.selectFrom('processedMessages').select('messageId').where('messageId', '=', env.id).executeTakeFirst()) ?? null);
        return statements.get(data.transactionId)!;
      };
      // Settled at quality 50, on time: the sums move, the score stays 50 (D15.2's worked examples).
      const same = await send({ transactionId: randomUUID(), providerAgentId: agentId, outcome: 'settled', qualityScore: 50, late: false, at: new Date().toISOString() });
      expect(same).toHaveLength(1);
      expect(same[0]).toMatch(/^with /);
      expect(same[0]).toContain('processed_messages');
      const kept = await identity.deps.db.selectFrom('trustScores').selectAll().where('agentId', '=', agentId).executeTakeFirstOrThrow();
      expect({ score: kept.score, weightedValue: Number(kept.weightedValue), halfWeights: Number(kept.halfWeights) }).toEqual({ score: 50, weightedValue: 100, halfWeights: 2 });
      // A failure moves it to 43: that statement writes nothing, and the outcome is kept in another transaction, the score written.
      const moved = await send({ transactionId: randomUUID(), providerAgentId: agentId, outcome: 'failed', qualityScore: null, late: false, at: new Date().toISOString() });
      expect(moved).toHaveLength(2);
      expect(moved[1]).not.toContain('processed_messages');
      const row = await identity.deps.db.selectFrom('trustScores').selectAll().where('agentId', '=', agentId).executeTakeFirstOrThrow();
      expect({ score: row.score, weightedValue: Number(row.weightedValue), halfWeights: Number(row.halfWeights) }).toEqual({ score: 43, weightedValue: 100, halfWeights: 4 });
      const changed = await eventually(async () => envelopes(events.trustScoreChanged.type).find((e) => e.data.agentId === agentId) ?? null);
      expect(changed.data).toEqual({ agentId, trustScore: 43, previousTrustScore: 50 });
      expect(await identity.deps.db.selectFrom('trustOutcomes').select('transactionId').where('agentId', '=', agentId).execute()).toHaveLength(2);
    } finally {
      pg.Client.prototype.query = query;
    }
  });

  it('decides "the score stays" in SQL exactly as trustScore computes it', async () => {
    // Every sum of up to 40 half weights (values 0–100 each), and random larger ones.
    const points: Array<[number, number]> = [];
    for (let h = 0; h <= 40; h++) for (let w = 0; w <= 100 * h; w++) points.push([w, h]);
    for (let i = 0; i < 20_000; i++) {
      const h = 1 + Math.floor(Math.random() * 2_000_000);
      points.push([Math.floor(Math.random() * (100 * h + 1)), h]);
    }
    const count = async (offset: number) => {
      const scores = points.map(([w, h]) => trustScore({ weightedValue: w, halfWeights: h }) + offset);
      const { rows } = await sql<{ n: number }>`
        with counted as (select true as kept, s as score, w as weighted_value, h as half_weights
          from unnest(${points.map((p) => p[0])}::bigint[], ${points.map((p) => p[1])}::bigint[], ${scores}::int[]) as t(w, h, s))
        select count(*)::int as n from (${sql.raw(scoreUnchangedSql('counted'))}) as unchanged`.execute(identity.deps.db);
      return rows[0]!.n;
    };
    expect(await count(0)).toBe(points.length);
    expect(await count(1)).toBe(0);
    expect(await count(-1)).toBe(0);
  });

  it('counts each outcome once when two replicas take outcomes of the same agents side by side, with repeated messages (D15.2)', async () => {
    const second = await startIdentityService({ bus, databaseUrl: database.url, config, logger });
    try {
      const agents = await Promise.all([0, 1, 2].map(async () => (await signUp()).reply.data.agent.id));
      const before = await identity.deps.db.selectFrom('processedMessages').select((eb) => eb.fn.countAll<number>().as('n')).where('consumer', '=', 'identity-trust-outcomes').executeTakeFirstOrThrow();
      // 120 outcomes over three agents, each published twice under different ids, and 30 messages
      // published twice under the same id after JetStream's window (a redelivery): the two replicas
      // share the consumer, so they record outcomes of the same agents at the same time.
      const outcomes = Array.from({ length: 120 }, (_, i) => outcome(agents[i % 3]!, i % 88)); // quality scores within 10–97
      const subject = subjects.event(bus.namespace, transactionOutcome.type);
      const sent = outcomes.flatMap((data) => [0, 1].map(() => ({ id: randomUUID(), type: transactionOutcome.type, occurredAt: data.at, data })));
      await Promise.all(sent.map((env) => bus.publish(subject, env, { msgId: env.id })));
      await Promise.all(sent.slice(0, 30).map((env) => bus.publish(subject, env, { msgId: `again-${env.id}` })));
      const rows = await eventually(async () => {
        // The records first: once all are there, the sums read next include every outcome.
        const processed = await identity.deps.db.selectFrom('processedMessages').select((eb) => eb.fn.countAll<number>().as('n')).where('consumer', '=', 'identity-trust-outcomes').executeTakeFirstOrThrow();
        const r = await identity.deps.db.selectFrom('trustScores').selectAll().where('agentId', 'in', agents).execute();
        return Number(processed.n) - Number(before.n) >= sent.length && r.reduce((n, x) => n + Number(x.halfWeights), 0) > 0 ? r : null;
      }, 20_000);
      for (const agentId of agents) {
        const inputs = outcomes.filter((o) => o.providerAgentId === agentId).map(outcomeInput);
        const sums = { weightedValue: inputs.reduce((s, i) => s + i.value * i.halfWeights, 0), halfWeights: inputs.reduce((s, i) => s + i.halfWeights, 0) };
        const row = rows.find((r) => r.agentId === agentId)!;
        expect({ weightedValue: Number(row.weightedValue), halfWeights: Number(row.halfWeights) }).toEqual(sums);
        expect(row.score).toBe(trustScore(sums));
        // The score the row ends at was published (two replicas' events need not arrive in order).
        const change = await eventually(async () => envelopes(events.trustScoreChanged.type).find((e) => e.data.agentId === agentId && e.data.trustScore === row.score) ?? null, 10_000);
        expect(change.data.trustScore).toBe(row.score);
      }
      const kept = await identity.deps.db.selectFrom('trustOutcomes').select('transactionId').where('agentId', 'in', agents).execute();
      expect(kept).toHaveLength(120);
      // Nothing left to redeliver: every message was acknowledged (a redelivery, from the server's own
      // timer, has no event to await: waited out).
      await new Promise((r) => setTimeout(r, 500));
      const after = await identity.deps.db.selectFrom('processedMessages').select((eb) => eb.fn.countAll<number>().as('n')).where('consumer', '=', 'identity-trust-outcomes').executeTakeFirstOrThrow();
      expect(Number(after.n) - Number(before.n)).toBe(sent.length);
    } finally {
      await second.stop();
    }
  });

  it('starts the sums from the outcomes recorded before them (migration 0009)', async () => {
    const earlier = await createTestDatabase();
    try {
      const { '0009-trust-sums': _added, '0010-trust-outcome-kept': _later, '0011-processed-age': _after, '0012-write-guard': _guard, ...before } = database_.migrations;
      await (await connectServiceDb({ url: earlier.url, schema: database_.schema, migrations: before })).close();
      const admin = new pg.Client({ connectionString: earlier.url });
      await admin.connect();
      const agents = [randomUUID(), randomUUID()];
      try {
        // Rows of agents the test does not make in full: foreign keys are not checked here.
        await admin.query(`set session_replication_role = replica; set search_path = ${database_.schema}`);
        for (const agentId of agents) await admin.query('insert into trust_scores (agent_id, score, updated_at) values ($1, 50, now())', [agentId]);
        const rows = [[agents[0], 80, 2], [agents[0], 0, 1], [agents[0], 100, 2], [agents[1], 0, 2]] as const;
        for (const [agentId, value, halfWeights] of rows) {
          await admin.query(`insert into trust_outcomes (transaction_id, agent_id, outcome, late, value, half_weights, ended_at) values ($1, $2, 'settled', false, $3, $4, now())`, [randomUUID(), agentId, value, halfWeights]);
        }
      } finally {
        await admin.end();
      }
      const migrated = await connectServiceDb<Database>({ url: earlier.url, schema: database_.schema, migrations: database_.migrations });
      try {
        const sums = await migrated.db.selectFrom('trustScores').select(['agentId', 'weightedValue', 'halfWeights']).where('agentId', 'in', agents).execute();
        expect(Object.fromEntries(sums.map((r) => [r.agentId, [Number(r.weightedValue), Number(r.halfWeights)]]))).toEqual({ [agents[0]!]: [360, 5], [agents[1]!]: [0, 2] });
      } finally {
        await migrated.close();
      }
    } finally {
      await earlier.drop();
    }
  });
});

describe('restart', () => {
  it('keeps every committed row and applies no migration twice', async () => {
    const { reply } = await signUp();
    await identity.stop();
    identity = await startIdentityService({ bus, databaseUrl: database.url, config, logger });
    const row = await identity.deps.db.selectFrom('accounts').select('id').where('id', '=', reply.data.id).executeTakeFirst();
    expect(row?.id).toBe(reply.data.id);
    const { rows } = await (await import('kysely')).sql<{ name: string }>`select name from identity.kysely_migration`.execute(identity.deps.db);
    expect(rows.map((r) => r.name)).toEqual(['0001-initial', '0002-wallet-redrive', '0003-idempotency-keys', '0004-signing-key-owners', '0005-outbox-claims', '0006-trust-outcomes', '0007-operator-actions', '0008-children', '0009-trust-sums', '0010-trust-outcome-kept', '0011-processed-age', '0012-write-guard']);
  });
});

describe('lost saga messages', () => {
  it('re-sends openWallet when the in-process bus of a killed process took the command with it', async () => {
    const db = await createTestDatabase();
    const first = await createTestBus('memory');
    const cfg = loadConfig({}, { BUS_NAMESPACE: first.bus.namespace, SAGA_WAIT_MS: '100' });
    let id = await startIdentityService({ bus: first.bus, databaseUrl: db.url, config: cfg, logger, walletRedriveAfterMs: 300 });
    try {
      const r = await callOperation(first.bus, identityOps.createAccount, { ctx: ctx(), input: { path: {}, query: {}, body: { accountType: 'individual', email: `${randomUUID()}@example.com`, displayName: 'x', agent: { name: 'a' } } } }, { timeoutMs: 5000 });
      expect(r.ok && r.status).toBe(202);
      const agentId = r.ok ? r.data.agent.id : '';
      // The process dies: the command, relayed to the in-process bus, is gone with it.
      await id.stop();
      await first.dispose();
      const second = await createTestBus('memory', first.bus.namespace);
      id = await startIdentityService({ bus: second.bus, databaseUrl: db.url, config: cfg, logger, walletRedriveAfterMs: 300 });
      const wallet = await startWalletService({ bus: second.bus, databaseUrl: db.url, config: cfg, logger });
      try {
        await eventually(async () => (await id.deps.db.selectFrom('agents').select('walletOpenedAt').where('id', '=', agentId).executeTakeFirst())?.walletOpenedAt, 10_000);
        const wallets = await wallet.deps.db.selectFrom('wallets').select('id').where('agentId', '=', agentId).execute();
        expect(wallets).toHaveLength(1);
      } finally {
        await wallet.stop();
        await second.dispose();
      }
    } finally {
      await id.stop();
      await db.drop();
    }
  });
});
