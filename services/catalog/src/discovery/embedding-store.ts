import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ModelState } from './meaning.js';
import { fromBytes, toBytes } from './sentence-encoder.js';

type Db = Kysely<Database> | Transaction<Database>;

/** A service's text as the encoder reads it, with the write (`xid`) it was read at. */
export interface ServiceText {
  id: string;
  name: string;
  category: string;
  subcategory: string | null;
  tags: string[];
  description: string;
  xid: string;
}

/** One embedding to save: the service, the write its text was read at, and the unit vector. */
export interface EmbeddingToSave {
  id: string;
  xid: string;
  vector: Float32Array;
}

export interface SwitchState extends ModelState {
  leaseOwner: string | null;
}

/** D22.1: the models the catalog's embeddings are of (one row, made by the migration). */
export async function readModelState(db: Db): Promise<SwitchState> {
  const row = await db.selectFrom('embeddingModels').select(['serving', 'servingEndpoint', 'next', 'nextEndpoint', 'leaseOwner']).executeTakeFirst();
  return row ?? { serving: null, servingEndpoint: null, next: null, nextEndpoint: null, leaseOwner: null };
}

/**
 * A catalog replica starting with `model` makes it the catalog's: served at once when nothing is
 * served yet; the one to re-embed for when another model serves (replacing any other switch in
 * progress: the latest start decides); and a switch in progress is abandoned when `model` is the one
 * serving (a roll-back). Returns the state after, and the model whose embeddings are dropped.
 */
export async function declareModel(db: Kysely<Database>, model: string, endpoint: string | null): Promise<{ state: SwitchState; dropped: string | null }> {
  return db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('embeddingModels').selectAll().forUpdate().executeTakeFirstOrThrow();
    const fresh = { leaseOwner: null, leaseUntil: null, changedAt: new Date() };
    // An endpoint moved under the same model keeps its embeddings: only its address is updated.
    let change: Partial<SwitchState & typeof fresh>;
    if (row.serving === null || row.serving === model) change = { serving: model, servingEndpoint: endpoint, next: null, nextEndpoint: null, ...(row.next === null ? {} : fresh) };
    else if (row.next === model) change = { nextEndpoint: endpoint };
    else change = { next: model, nextEndpoint: endpoint, ...fresh };
    await trx.updateTable('embeddingModels').set(change).execute();
    const dropped = row.next !== null && row.next !== model ? row.next : null;
    if (dropped !== null) await retireModel(trx, dropped);
    return { state: await readModelState(trx), dropped };
  });
}

/**
 * Takes (or keeps) the claim to re-embed the catalog for `next` for `ms` milliseconds: one replica at
 * a time does it, and another takes over when a claim runs out. False when another holds it, or
 * `next` is no longer the model to prepare.
 */
export async function claimSwitch(db: Db, next: string, owner: string, ms: number): Promise<boolean> {
  const r = await sql`update embedding_models set lease_owner = ${owner}::uuid, lease_until = now() + ${ms} * interval '1 millisecond'
    where next = ${next} and (lease_owner = ${owner}::uuid or lease_until is null or lease_until < now())`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/**
 * The switch itself, in one statement every replica sees at once: `next` serves from now on, and the
 * embeddings of the model it replaces are dropped. False when the state is no longer the one the
 * caller prepared for (another replica switched, or a later start chose another model).
 */
export async function completeSwitch(db: Kysely<Database>, serving: string | null, next: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await sql`update embedding_models set serving = next, serving_endpoint = next_endpoint, next = null, next_endpoint = null,
      lease_owner = null, lease_until = null, changed_at = now() where next = ${next} and serving is not distinct from ${serving}`.execute(trx);
    if (Number(r.numAffectedRows ?? 0) !== 1) return false;
    if (serving !== null) await retireModel(trx, serving);
    return true;
  });
}

/** Drops every embedding of a model the catalog no longer uses. */
export async function retireModel(db: Db, model: string): Promise<void> {
  await db.deleteFrom('serviceEmbeddings').where('model', '=', model).execute();
}

/**
 * Up to `limit` services that are not deleted and have no embedding of `model`, in id order after
 * `after` (a pass over the catalog continues where the last batch ended).
 */
export async function servicesLacking(db: Db, model: string, limit: number, after: string | null = null): Promise<ServiceText[]> {
  let q = db.selectFrom('services as s')
    .select(['s.id', 's.name', 's.category', 's.subcategory', 's.tags', 's.description', sql<string>`s.written_xid::text`.as('xid')])
    .where('s.status', '<>', 'inactive')
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('serviceEmbeddings as e').select(sql`1`.as('one')).whereRef('e.serviceId', '=', 's.id').where('e.model', '=', model))))
    .orderBy('s.id')
    .limit(limit);
  if (after !== null) q = q.where('s.id', '>', after);
  return q.execute();
}

/**
 * Saves embeddings of `model` computed in the background, each only if its service was not written
 * since its text was read (the row is locked while checked, so a change committing meanwhile wins)
 * and only while the catalog still uses `model` (a replica that has not yet seen a switch must not
 * bring back a retired model's rows). With `touch`, each service's row is written too, so that every
 * replica's change feed reloads it with its new embedding (the serving model's); the next model's
 * embeddings are read all at once when it starts serving. Returns how many were saved.
 */
export async function saveEmbeddings(db: Db, model: string, rows: EmbeddingToSave[], touch: boolean): Promise<number> {
  if (rows.length === 0) return 0;
  const given = sql`unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.xid)}::text[], ${rows.map((r) => toBytes(r.vector))}::bytea[]) as g(id, xid, embedding)`;
  const inUse = sql`exists (select 1 from embedding_models m where m.serving = ${model} or m.next = ${model})`;
  const r = touch
    ? await sql`with given as (select * from ${given}),
        touched as (update services s set written_xid = pg_current_xact_id() from given g where s.id = g.id and s.written_xid = g.xid::xid8 and ${inUse} returning s.id)
        insert into service_embeddings (service_id, model, embedding) select g.id, ${model}, g.embedding from given g join touched t on t.id = g.id
        on conflict do nothing`.execute(db)
    : await sql`insert into service_embeddings (service_id, model, embedding)
        select g.id, ${model}, g.embedding from ${given} join services s on s.id = g.id
        where s.written_xid = g.xid::xid8 and ${inUse} for share of s
        on conflict do nothing`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * A service's embeddings written with its text, in the transaction that writes it: `replace` drops
 * those of its previous text first. Each only while the catalog still uses its model.
 */
export async function writeServiceEmbeddings(trx: Transaction<Database>, serviceId: string, embeddings: { model: string; vector: Float32Array }[], replace: boolean): Promise<void> {
  if (replace) await trx.deleteFrom('serviceEmbeddings').where('serviceId', '=', serviceId).execute();
  for (const { model, vector } of embeddings) {
    await sql`insert into service_embeddings (service_id, model, embedding)
      select ${serviceId}::uuid, ${model}, ${toBytes(vector)} where exists (select 1 from embedding_models m where m.serving = ${model} or m.next = ${model})
      on conflict (service_id, model) do update set embedding = excluded.embedding, created_at = now()`.execute(trx);
  }
}

/** Calls `each` with every embedding of `model` among `ids`, read a thousand at a time. */
export async function forEachEmbedding(db: Db, model: string, ids: string[], each: (id: string, vector: Float32Array) => void): Promise<void> {
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db.selectFrom('serviceEmbeddings').select(['serviceId', 'embedding'])
      .where('model', '=', model).where('serviceId', 'in', ids.slice(i, i + 1000)).execute();
    for (const r of rows) each(r.serviceId, fromBytes(r.embedding));
  }
}
