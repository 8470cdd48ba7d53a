import { sql } from 'kysely';
import { pagination, type catalogOps, type ListServicesQuery, type ServiceSort } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import type { DiscoveryIndex, IndexedService } from '../discovery/index-store.js';
import { blend, compositeRankSql, RANK_WEIGHTS } from '../domain/rank.js';
import { livenessFactor } from '../domain/liveness.js';
import { LIVENESS_COLUMNS } from '../liveness/provider-liveness.js';
import { selectPage } from './page-select.js';
import { listItemView } from './views.js';

type Ops = typeof catalogOps;

/** D7.5 sorts; each breaks ties by `createdAt` desc, then `id`. */
const ORDER: Record<ServiceSort, ReturnType<typeof sql>> = {
  composite_rank: sql`${compositeRankSql()} desc`,
  price_asc: sql`s.price_cents asc`,
  price_desc: sql`s.price_cents desc`,
  trust_score: sql`p.trust_score desc`,
  created_at: sql`s.created_at desc`,
};

const COLUMNS = [
  's.id', 's.agentId', 's.name', 's.description', 's.version', 's.category', 's.subcategory', 's.tags', 's.pricing', 's.sla',
  's.capabilities', 's.metadata', 's.sampleNeeds', 's.status', 's.createdAt', 's.updatedAt', 'p.trustScore', 'p.name as providerName',
  ...LIVENESS_COLUMNS,
] as const;

/** One listed service's sort key, smaller first (descending sorts negated); ties go by createdAt desc, then id. */
const SORT_KEY: Record<ServiceSort, (s: IndexedService) => number> = {
  composite_rank: (s) => -blend(RANK_WEIGHTS, s.provider.trustScore, s.cheapness, s.speed) * livenessFactor(s.provider.liveness),
  price_asc: (s) => s.priceCents,
  price_desc: (s) => -s.priceCents,
  trust_score: (s) => -s.provider.trustScore,
  created_at: (s) => -s.createdAtMs,
};

/**
 * The ids of one page and the total, from the index: the matches' sort keys in one array, their
 * page selected without sorting the rest (`selectPage`).
 */
function listFromIndex(index: DiscoveryIndex, query: ListServicesQuery, tags: string[], offset: number, limit: number): { ids: string[]; total: number } {
  const keyOf = SORT_KEY[(query.sortBy ?? 'composite_rank') as ServiceSort];
  const matches: IndexedService[] = [];
  const keys: number[] = [];
  for (const s of index.services.values()) {
    const p = s.provider;
    if (p.status !== 'active') continue;
    if (query.category !== undefined && s.categoryExact !== query.category) continue;
    if (query.maxPriceCents !== undefined && s.priceCents > query.maxPriceCents) continue;
    if (query.minTrustScore !== undefined && p.trustScore < query.minTrustScore) continue;
    if (query.maxLatencyMs !== undefined && s.maxLatencyMs > query.maxLatencyMs) continue;
    if (tags.length > 0 && !tags.every((t) => s.tags.includes(t))) continue;
    matches.push(s);
    keys.push(keyOf(s));
  }
  const compare = (a: number, b: number): number => {
    const x = matches[a]!;
    const y = matches[b]!;
    return keys[a]! - keys[b]! || y.createdAtMs - x.createdAtMs || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
  };
  return { ids: selectPage(matches.length, compare, offset, limit).map((i) => matches[i]!.id), total: matches.length };
}

/** "a, b,,c" → ["a", "b", "c"]: the services listed carry all of them (D7.5). */
export function parseTags(tags: string | undefined): string[] {
  return tags === undefined ? [] : [...new Set(tags.split(',').map((t) => t.trim()).filter(Boolean))];
}

/**
 * GET /v1/services (D7.5): active services of active providers, filtered and sorted, with an exact
 * total. With `agentId` of the caller itself, its paused services are listed too (EXT).
 *
 * The whole catalog is filtered and sorted in the discovery index's memory (a count and a
 * sort over every row cost Postgres ~100 ms at 100,000 services), caught up first like discover, so
 * every write answered before the request is in it; only the page's rows are read from the tables.
 * One provider's services (`agentId`) come from the tables, by their index.
 */
export const listServices = (deps: CatalogDeps, index: DiscoveryIndex): OperationHandler<Ops['listServices']> => async ({ query }, ctx) => {
  const caller = requireAgent(ctx);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const tags = parseTags(query.tags);
  const own = query.agentId !== undefined && query.agentId === caller.agentId;
  if (query.agentId === undefined) {
    await index.catchUp();
    const { ids, total } = listFromIndex(index, query, tags, offset, limit);
    const rows = ids.length === 0 ? [] : await deps.db.selectFrom('services as s').innerJoin('providers as p', 'p.agentId', 's.agentId').select(COLUMNS).where('s.id', 'in', ids).execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    // A service paused since the index looked is left out of the page (the next request sees it gone).
    const page = ids.map((id) => byId.get(id)).filter((r) => r !== undefined);
    return { data: page.map((r) => listItemView(r)), pagination: pagination(total, limit, offset) };
  }

  let q = deps.db.selectFrom('services as s').innerJoin('providers as p', 'p.agentId', 's.agentId');
  q = own
    ? q.where('s.agentId', '=', caller.agentId).where('s.status', 'in', ['active', 'paused'])
    : q.where('s.status', '=', 'active').where('p.status', '=', 'active');
  if (query.agentId !== undefined && !own) q = q.where('s.agentId', '=', query.agentId);
  if (query.category !== undefined) q = q.where('s.category', '=', query.category);
  if (tags.length) q = q.where(sql<boolean>`s.tags @> ${tags}::text[]`);
  if (query.maxPriceCents !== undefined) q = q.where('s.priceCents', '<=', query.maxPriceCents);
  if (query.minTrustScore !== undefined) q = q.where('p.trustScore', '>=', query.minTrustScore);
  if (query.maxLatencyMs !== undefined) q = q.where('s.maxLatencyMs', '<=', query.maxLatencyMs);

  const [rows, count] = await Promise.all([
    q.select(COLUMNS)
      .orderBy(ORDER[(query.sortBy ?? 'composite_rank') as ServiceSort])
      .orderBy('s.createdAt', 'desc')
      .orderBy('s.id')
      .limit(limit)
      .offset(offset)
      .execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return {
    data: rows.map((r) => listItemView({ ...r, capabilities: r.capabilities, metadata: r.metadata })),
    pagination: pagination(count.n, limit, offset),
  };
};
