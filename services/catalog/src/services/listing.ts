import { sql } from 'kysely';
import { pagination, type catalogOps, type ServiceSort } from '@aex/contracts';
import { requireAgent, type OperationHandler } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import { compositeRankSql } from '../domain/rank.js';
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

/** "a, b,,c" → ["a", "b", "c"]: the services listed carry all of them (D7.5). */
export function parseTags(tags: string | undefined): string[] {
  return tags === undefined ? [] : [...new Set(tags.split(',').map((t) => t.trim()).filter(Boolean))];
}

/**
 * GET /v1/services (D7.5): active services of active providers, filtered and sorted, with an exact
 * total. With `agentId` of the caller itself, its paused services are listed too (EXT).
 */
export const listServices = (deps: CatalogDeps): OperationHandler<Ops['listServices']> => async ({ query }, ctx) => {
  const caller = requireAgent(ctx);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const tags = parseTags(query.tags);
  const own = query.agentId !== undefined && query.agentId === caller.agentId;

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
    q.select([
      's.id', 's.agentId', 's.name', 's.description', 's.version', 's.category', 's.subcategory', 's.tags', 's.pricing', 's.sla',
      's.capabilities', 's.metadata', 's.status', 's.createdAt', 's.updatedAt', 'p.trustScore', 'p.name as providerName',
    ])
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
