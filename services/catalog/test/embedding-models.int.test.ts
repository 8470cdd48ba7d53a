import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectServiceDb, type ServiceDb } from '@aex/platform';
import { createTestDatabase, type TestDatabase } from '@aex/platform/testing';
import { database } from '../src/db/migrations/index.js';
import type { Database } from '../src/db/schema.js';
import { claimSwitch, completeSwitch, declareModel, readModelState, saveEmbeddings, servicesLacking } from '../src/discovery/embedding-store.js';
import { fromBytes, toBytes } from '../src/discovery/sentence-encoder.js';

// D22.1 on real Postgres: what the database holds decides which model's embeddings discovery
// compares, for every catalog replica — the migration carrying a catalog's builtin embeddings over,
// the switch declared by a replica's start, claimed by one replica at a time and completed in one
// statement, and embeddings saved only for the text and the models they were made for.

let db: TestDatabase;
let svc: ServiceDb<Database>;
let k: Kysely<Database>;

beforeAll(async () => {
  db = await createTestDatabase();
  // The catalog as it was before embeddings were kept per model, with one embedded service.
  const before = Object.fromEntries(Object.entries(database.migrations).filter(([name]) => name < '0006'));
  const old = await connectServiceDb<Database>({ url: db.url, ...database, migrations: before });
  const legacy = await service(old.db, 'Legacy Weather');
  await old.db.updateTable('services').set({ embedding: toBytes(unit([3, 4])), embeddingModel: 'use-512' }).where('id', '=', legacy).execute();
  await old.close();
  svc = await connectServiceDb<Database>({ url: db.url, ...database });
  k = svc.db;
  legacyId = legacy;
  // What the migration left, before any test changes it.
  migrated = {
    rows: await k.selectFrom('serviceEmbeddings').select(['serviceId', 'model', 'embedding']).execute(),
    serving: (await k.selectFrom('embeddingModels').select('serving').executeTakeFirstOrThrow()).serving,
  };
});
afterAll(async () => {
  await svc?.close();
  await db?.drop();
});
// Each test starts from the state the migration left: the builtin model serving, nothing next.
beforeEach(async () => {
  await k.updateTable('embeddingModels').set({ serving: 'use-512', servingEndpoint: null, next: null, nextEndpoint: null, leaseOwner: null, leaseUntil: null }).execute();
  await k.deleteFrom('serviceEmbeddings').where('model', '<>', 'use-512').execute();
});

let legacyId: string;
let migrated: { rows: { serviceId: string; model: string; embedding: Buffer }[]; serving: string | null };
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / n));
};

async function service(on: Kysely<Database>, name: string): Promise<string> {
  const agentId = randomUUID();
  const id = randomUUID();
  await sql`insert into providers (agent_id, account_id, name, status, trust_score, source_at, trust_at) values (${agentId}, ${randomUUID()}, 'p', 'active', 50, now(), now())`.execute(on);
  await sql`insert into services (id, agent_id, name, description, version, category, tags, input_schema, output_schema, pricing, sla, capabilities, examples, metadata, status, revision,
    price_cents, budget_floor_cents, max_latency_ms, text_a, text_b, text_c, text_d, text_e, created_at, updated_at)
    values (${id}, ${agentId}, ${name}, 'd', '1.0.0', 'c', '{}', '{}', '{}', '{}', '{}', '[]', '[]', '{}', 'active', 1, 1, 1, 1, 'a', 'b', 'c', 'd', 'e', now(), now())`.execute(on);
  return id;
}

const xidOf = async (id: string) => (await sql<{ xid: string }>`select written_xid::text as xid from services where id = ${id}`.execute(k)).rows[0]!.xid;
const modelsOf = async (id: string) => (await k.selectFrom('serviceEmbeddings').select('model').where('serviceId', '=', id).orderBy('model').execute()).map((r) => r.model);

describe('the migration to embeddings per model', () => {
  it('carries an existing catalog\'s builtin embeddings over, and the builtin model serves them', async () => {
    expect(migrated.rows.map((r) => [r.serviceId, r.model])).toEqual([[legacyId, 'use-512']]);
    expect([...fromBytes(migrated.rows[0]!.embedding)]).toEqual([...unit([3, 4])]);
    expect(migrated.serving).toBe('use-512');
  });
});

describe('declaring a model at start (the latest start decides)', () => {
  it('makes another model the next one, leaving the serving one as it is', async () => {
    const { state, dropped } = await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    expect([state.serving, state.next, state.nextEndpoint, dropped]).toEqual(['use-512', 'openai:beta@64', 'http://tei/v1', null]);
    // Another replica of the same configuration changes nothing.
    expect((await declareModel(k, 'openai:beta@64', 'http://tei/v1')).state).toMatchObject({ serving: 'use-512', next: 'openai:beta@64' });
  });

  it('replaces a switch in progress by a later start\'s model, dropping the abandoned model\'s vectors', async () => {
    const id = await service(k, 'S');
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    await saveEmbeddings(k, 'openai:beta@64', [{ id, xid: await xidOf(id), vector: unit([1, 1]) }], false);
    expect(await modelsOf(id)).toEqual(['openai:beta@64']);
    const { state, dropped } = await declareModel(k, 'openai:gamma', 'http://tei/v1');
    expect([state.serving, state.next, dropped]).toEqual(['use-512', 'openai:gamma', 'openai:beta@64']);
    expect(await modelsOf(id)).toEqual([]);
  });

  it('abandons a switch when a replica starts with the serving model again (a roll-back)', async () => {
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    const { state, dropped } = await declareModel(k, 'use-512', null);
    expect([state.serving, state.next, dropped]).toEqual(['use-512', null, 'openai:beta@64']);
  });

  it('serves the first model declared on an empty catalog at once', async () => {
    await k.updateTable('embeddingModels').set({ serving: null }).execute();
    const { state } = await declareModel(k, 'openai:alpha', 'http://tei/v1');
    expect([state.serving, state.servingEndpoint, state.next]).toEqual(['openai:alpha', 'http://tei/v1', null]);
  });
});

describe('the switch', () => {
  it('is claimed by one replica at a time; a claim that ran out is taken over', async () => {
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    const [a, b] = [randomUUID(), randomUUID()];
    expect(await claimSwitch(k, 'openai:beta@64', a, 60_000)).toBe(true);
    expect(await claimSwitch(k, 'openai:beta@64', b, 60_000)).toBe(false);
    expect(await claimSwitch(k, 'openai:beta@64', a, 1)).toBe(true);
    await expect.poll(() => claimSwitch(k, 'openai:beta@64', b, 60_000), { timeout: 5000, interval: 20 }).toBe(true);
    expect(await claimSwitch(k, 'openai:other', a, 60_000)).toBe(false);
  });

  it('completes in one statement: the next model serves, the old one\'s vectors are dropped; a stale completion does nothing', async () => {
    const id = await service(k, 'T');
    await saveEmbeddings(k, 'use-512', [{ id, xid: await xidOf(id), vector: unit([1, 2]) }], true);
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    await saveEmbeddings(k, 'openai:beta@64', [{ id, xid: await xidOf(id), vector: unit([2, 1]) }], false);
    expect(await completeSwitch(k, 'openai:other', 'openai:beta@64')).toBe(false);
    expect(await completeSwitch(k, 'use-512', 'openai:beta@64')).toBe(true);
    expect(await readModelState(k)).toMatchObject({ serving: 'openai:beta@64', servingEndpoint: 'http://tei/v1', next: null });
    expect(await modelsOf(id)).toEqual(['openai:beta@64']);
    expect(await k.selectFrom('serviceEmbeddings').select('model').where('model', '=', 'use-512').execute()).toEqual([]);
    expect(await completeSwitch(k, 'use-512', 'openai:beta@64')).toBe(false);
  });

  it('lists the services lacking the next model\'s vector, in id order after a cursor, deleted ones left out', async () => {
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    const ids = [await service(k, 'L1'), await service(k, 'L2'), await service(k, 'L3')].sort();
    await k.updateTable('services').set({ status: 'inactive' }).where('id', '=', ids[2]!).execute();
    await saveEmbeddings(k, 'openai:beta@64', [{ id: ids[0]!, xid: await xidOf(ids[0]!), vector: unit([1]) }], false);
    const lacking = (await servicesLacking(k, 'openai:beta@64', 1000)).map((s) => s.id);
    expect(lacking).toContain(ids[1]);
    expect(lacking).not.toContain(ids[0]);
    expect(lacking).not.toContain(ids[2]);
    expect((await servicesLacking(k, 'openai:beta@64', 1000, ids[1]!)).every((s) => s.id > ids[1]!)).toBe(true);
  });
});

describe('saving embeddings made in the background', () => {
  it('saves none for a service written since its text was read', async () => {
    const id = await service(k, 'U');
    const xid = await xidOf(id);
    await k.updateTable('services').set({ description: 'changed meanwhile' }).where('id', '=', id).execute();
    expect(await saveEmbeddings(k, 'use-512', [{ id, xid, vector: unit([1, 0]) }], true)).toBe(0);
    expect(await saveEmbeddings(k, 'use-512', [{ id, xid: await xidOf(id), vector: unit([1, 0]) }], true)).toBe(1);
  });

  it('saves none of a model the catalog no longer uses (a replica that has not seen a switch yet)', async () => {
    const id = await service(k, 'V');
    expect(await saveEmbeddings(k, 'openai:retired', [{ id, xid: await xidOf(id), vector: unit([1, 0]) }], false)).toBe(0);
    expect(await modelsOf(id)).toEqual([]);
  });

  it('writes the service row with the serving model\'s vector, so every replica\'s change feed reloads it, and not with the next model\'s', async () => {
    const id = await service(k, 'W');
    await declareModel(k, 'openai:beta@64', 'http://tei/v1');
    const before = await xidOf(id);
    await saveEmbeddings(k, 'openai:beta@64', [{ id, xid: before, vector: unit([1, 0]) }], false);
    expect(await xidOf(id)).toBe(before);
    await saveEmbeddings(k, 'use-512', [{ id, xid: before, vector: unit([0, 1]) }], true);
    expect(BigInt(await xidOf(id))).toBeGreaterThan(BigInt(before));
    expect(await modelsOf(id)).toEqual(['openai:beta@64', 'use-512']);
  });
});
