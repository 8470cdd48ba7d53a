import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { catalogOps, DiscoverBody, DiscoverView, DiscoverWarning, DiscoveryMatch, Sla, Urgency } from '@aex/contracts';
import { fitItems, requireAgent, type OperationHandler } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import { inputCompatibility, outputCompatibility, requiredOutput } from '../domain/compatibility.js';
import { blend, cheapness, clamp01, RANK_WEIGHTS, speed, type RankWeights } from '../domain/rank.js';
import { livenessFactor } from '../domain/liveness.js';
import { LIVENESS_COLUMNS, livenessView } from '../liveness/provider-liveness.js';
import type { LearnedRanking } from '../learning/learned-ranking.js';
import { answerWarnings, CLOSEST_SHOWN, CONFIDENT_RELEVANCE, noMatchWarning } from './answer-warnings.js';
import { filteredBy, tallyFilters, type DiscoverFilters } from './discover-filters.js';
import type { DiscoveryIndex, IndexedService } from './index-store.js';
import type { Relevance } from './relevance-scorer.js';
import { needTokens } from './need.js';

type Ops = typeof catalogOps;

/**
 * How the parts of a query weigh in the match (D8.3): meaning first, then what goes in and out.
 * Only the parts a query has count; with none, every service matches fully.
 */
export const MATCH_WEIGHTS = { need: 0.6, input: 0.2, output: 0.2 } as const;
/** The preference (trust, price, latency) can move a score by at most this share (D8.4). */
export const PREFERENCE_SHARE = 0.15;

/** D8.4: `high` favours low latency, `low` favours price; `normal` is the listing's composite rank. */
export function preference(urgency: Urgency, s: { trustScore: number; priceCents: number; maxLatencyMs: number }): number {
  return preferenceOf(urgency, s.trustScore, cheapness(s.priceCents), speed(s.maxLatencyMs));
}

const PREFERENCE_WEIGHTS: Record<Urgency, RankWeights> = {
  normal: RANK_WEIGHTS,
  high: { speed: 0.6, trust: 0.2, cheapness: 0.2 },
  low: { cheapness: 0.6, trust: 0.2, speed: 0.2 },
};

function preferenceOf(urgency: Urgency, trustScore: number, cheap: number, fast: number): number {
  return blend(PREFERENCE_WEIGHTS[urgency], trustScore, cheap, fast);
}

/** The match of the parts a query has, each in [0, 1], into one number in [0, 1]. */
export function combineMatch(parts: { need?: number; input?: number; output?: number }): number {
  let sum = 0;
  let weight = 0;
  for (const key of ['need', 'input', 'output'] as const) {
    const v = parts[key];
    if (v === undefined) continue;
    sum += MATCH_WEIGHTS[key] * v;
    weight += MATCH_WEIGHTS[key];
  }
  return weight === 0 ? 1 : sum / weight;
}

/**
 * compatibilityScore (D8.5): the match scaled by the preference, so that among equal matches the
 * trusted, cheap or fast one (by urgency) comes first, but no preference lifts a worse match far.
 * A need the service has nothing to do with, or an input/output it cannot take at all, is no match.
 * D22.3: then scaled by the provider's liveness, so a provider that stopped delivering sinks below a
 * live one of equal relevance, while a good match of it still appears, lower.
 */
export function compatibilityScore(parts: { need?: number; input?: number; output?: number }, pref: number, liveness = 1): number {
  if (parts.need === 0) return 0;
  if (parts.need === undefined && (parts.input === 0 || parts.output === 0)) return 0;
  const score = combineMatch(parts) * (1 - PREFERENCE_SHARE + PREFERENCE_SHARE * clamp01(pref)) * livenessFactor(liveness);
  return Math.round(score * 10_000) / 10_000;
}

/**
 * The best compatibilityScore a service related to the need by `need` (> 0) could get with preference
 * `pref`: its input and output, when the query has them, fitting fully. The same arithmetic as
 * `compatibilityScore`, in the same order, without building the parts: it runs for every service
 * related to a need (tens of thousands at 100,000 services).
 */
export function ceilingScore(withInput: boolean, withOutput: boolean): (need: number, pref: number, liveness?: number) => number {
  let weight = MATCH_WEIGHTS.need;
  if (withInput) weight += MATCH_WEIGHTS.input;
  if (withOutput) weight += MATCH_WEIGHTS.output;
  return (need, pref, liveness = 1) => {
    let sum = MATCH_WEIGHTS.need * need;
    if (withInput) sum += MATCH_WEIGHTS.input;
    if (withOutput) sum += MATCH_WEIGHTS.output;
    return Math.round((sum / weight) * (1 - PREFERENCE_SHARE + PREFERENCE_SHARE * clamp01(pref)) * livenessFactor(liveness) * 10_000) / 10_000;
  };
}

interface Candidate {
  service: IndexedService;
  parts: { need?: number; input?: number; output?: number };
  score: number;
}

/** How many candidates beyond `limit` are re-checked against the tables and their validators. */
const RECHECK_EXTRA = 5;

/** POST /v1/services/discover (D8): filters, then ranks every active service of an active provider by compatibility. */
export const discover = (deps: CatalogDeps, index: DiscoveryIndex, learning: LearnedRanking): OperationHandler<Ops['discover']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  const limit = body.limit ?? 10;
  const urgency = body.urgency ?? 'normal';
  const hasNeed = body.need !== undefined && needTokens(body.need).length > 0;
  // Read-your-writes: every write answered before this request is in the index it scores. The
  // need's analysis runs meanwhile; the scorer reads the index only once caught up.
  const caughtUp = index.catchUp();
  const related = hasNeed ? await index.scorer.relevance(body.need!, caughtUp) : undefined;
  await caughtUp;
  // D22.2: services bought for needs close to this one move up (failures down), by a bounded share.
  const scored = related && learning.apply(body.need!, related, index.services, deps.now());
  const wantedOutput = body.outputRequired ? requiredOutput(body.outputRequired) : undefined;
  const filters: DiscoverFilters = { category: body.category?.toLowerCase(), maxBudgetCents: body.maxBudgetCents, minTrustScore: body.minTrustScore };
  // D22.4: when no service clears the relevance floor, the closest few under it stand in.
  const closest = scored !== undefined && scored.items.length === 0 ? scored.faint?.() : undefined;
  const shown = closest ? Math.min(limit, CLOSEST_SHOWN) : limit;

  // Only the best `keep` are kept (sorted insertion into a short list); all are counted.
  const keep = shown + RECHECK_EXTRA;
  const best: Candidate[] = [];
  let total = 0;
  const ceiling = ceilingScore(Boolean(body.inputAvailable), wantedOutput !== undefined);
  const consider = (s: IndexedService, need: number | undefined): void => {
    const provider = s.provider;
    if (provider.status !== 'active' || filteredBy(s, filters) !== null) return;
    const pref = preferenceOf(urgency, provider.trustScore, s.cheapness, s.speed);
    // With a need, every service related to it that passes the filters matches (its score is at
    // least 0.6 × relevance × 0.85 > 0): it is counted, and fully scored only when the best its
    // input and output could make of it would still enter the short list (at 100,000
    // services a need relates tens of thousands).
    if (need !== undefined && best.length === keep && ceiling(need, pref, provider.liveness) < best[keep - 1]!.score) {
      total += 1;
      return;
    }
    const parts: Candidate['parts'] = need === undefined ? {} : { need };
    if (body.inputAvailable) parts.input = inputCompatibility(s.inputSig, body.inputAvailable);
    if (wantedOutput) parts.output = outputCompatibility(s.outputSig, wantedOutput);
    const score = compatibilityScore(parts, pref, provider.liveness);
    if (score <= 0) return;
    total += 1;
    if (best.length === keep && byScore(best[keep - 1]!, { score, service: s }) <= 0) return;
    const c = { service: s, parts, score };
    let at = best.length;
    while (at > 0 && byScore(best[at - 1]!, c) > 0) at--;
    best.splice(at, 0, c);
    if (best.length > keep) best.pop();
  };
  if (scored) {
    // With a need, only the services related to it can match: those, not the whole index.
    const pool = closest ?? scored;
    for (let i = 0; i < pool.items.length; i++) {
      const s = pool.items[i];
      if (s) consider(s, pool.values[i]!);
    }
  } else {
    for (const s of index.services.values()) consider(s, undefined);
  }

  const { matches, dropped } = await recheck(deps, body, best, urgency);
  const queryId = randomUUID();
  const wanted = matches.slice(0, shown);
  // Matches carry their schemas (up to 64 KiB each): as many as the answer can carry, best first.
  const page = fitItems(wanted, ctx.replyBudgetBytes - ANSWER_FRAME_BYTES);
  // The closest under the floor are shown, not counted: they are no matches (D8.5, D22.4).
  const totalMatches = closest ? 0 : Math.max(wanted.length, total - dropped);
  const warnings = warningsOf(deps, index, { body, filters, scored, closest, page, empty: wanted.length === 0 });
  return ctx.effect(deps.tx, async (trx) => {
    await trx.insertInto('discoveryQueries').values({
      id: queryId,
      agentId: caller.agentId,
      request: JSON.stringify(body),
      totalMatches,
      results: JSON.stringify(page.map((m) => ({ serviceId: m.serviceId, compatibilityScore: m.compatibilityScore }))),
      scorer: index.scorer.name,
      createdAt: deps.now(),
    }).execute();
    return { data: { matches: page, totalMatches, queryId, truncated: page.length < wanted.length, warnings } };
  });
};

/** Everything an answer says about itself: meaning left out, a spelling suggestion, weak or no matches (D22.4). */
function warningsOf(deps: CatalogDeps, index: DiscoveryIndex, a: {
  body: DiscoverBody;
  filters: DiscoverFilters;
  scored: Relevance<IndexedService> | undefined;
  closest: { items: (IndexedService | undefined)[] } | undefined;
  page: DiscoveryMatch[];
  /** Nothing to show (not merely nothing that fits in one answer: that is `truncated`). */
  empty: boolean;
}): DiscoverWarning[] {
  const { body, scored, closest, page } = a;
  const related = scored && (closest ? { items: closest.items, related: 'faint' as const } : { items: scored.items, related: 'match' as const });
  const weak = page.length > 0 && page.every((m) => m.lowConfidence);
  const confident = weak && scored ? scored.items.filter((s, i) => scored.values[i]! >= CONFIDENT_RELEVANCE) : [];
  return [
    ...(scored ? meaningWarnings(deps, scored.meaningError) : []),
    ...answerWarnings({
      need: scored ? body.need : undefined, shown: page, closestOnly: closest !== undefined, corrections: scored?.corrections,
      ...(confident.length > 0 ? { confidentRemoved: { tally: tallyFilters(confident, a.filters, () => null), body } } : {}),
    }),
    ...(a.empty ? [emptyAnswerWarning(index, body, a.filters, related)] : []),
  ];
}

/** Why meaning did not count in a ranking by need, when it did not. */
function meaningWarnings(deps: CatalogDeps, failure: string | undefined): DiscoverView['warnings'] {
  const status = deps.meaning.status;
  if (status.state === 'off') {
    return [{ code: 'SEMANTIC_RANKING_OFF', message: 'Ranking by meaning is turned off on this exchange (DISCOVERY_MEANING=false): services were matched by their words alone.' }];
  }
  const reason = failure ?? (status.state === 'unavailable' ? status.reason : undefined);
  if (reason === undefined) return [];
  return [{ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: `Ranking by meaning is unavailable (${reason}): services were matched by their words alone.` }];
}

/**
 * Why an answer came out empty (D22.4): what the filters removed from the services related to the
 * need — or, without one, from every active service. Only run for an empty answer.
 */
function emptyAnswerWarning(index: DiscoveryIndex, body: DiscoverBody, filters: DiscoverFilters, related?: { items: (IndexedService | undefined)[]; related: 'match' | 'faint' }): DiscoverWarning {
  const wantedOutput = body.outputRequired ? requiredOutput(body.outputRequired) : undefined;
  // Without a need, an input or output a service cannot take at all is what removes it (D8.5).
  const io = (s: IndexedService) => {
    if (related) return null;
    if (body.inputAvailable && inputCompatibility(s.inputSig, body.inputAvailable) === 0) return 'inputAvailable';
    if (wantedOutput && outputCompatibility(s.outputSig, wantedOutput) === 0) return 'outputRequired';
    return null;
  };
  let active = 0;
  for (const s of index.services.values()) if (s.provider.status === 'active') active += 1;
  const tally = tallyFilters(related ? related.items : index.services.values(), filters, io);
  return noMatchWarning(tally, body, active, related ? related.related : 'all');
}

/** Room kept in a discover answer for everything but the matches. */
const ANSWER_FRAME_BYTES = 1024;

function byScore(a: { score: number; service: { id: string } }, b: { score: number; service: { id: string } }): number {
  return b.score - a.score || (a.service.id < b.service.id ? -1 : 1);
}

/**
 * The best candidates, read again from the tables (a service paused or a provider deactivated since
 * the index last looked is dropped; trust, price and SLA as they are now); the input match of each
 * that may accept the input is made exact with its compiled validator (D8.3), which may reorder them.
 */
async function recheck(deps: CatalogDeps, body: DiscoverBody, top: Candidate[], urgency: Urgency): Promise<{ matches: DiscoveryMatch[]; dropped: number }> {
  if (top.length === 0) return { matches: [], dropped: 0 };
  let q = deps.db
    .selectFrom('services as s')
    .innerJoin('providers as p', 'p.agentId', 's.agentId')
    .select(['s.id', 's.agentId', 's.name', 's.revision', 's.sla', 's.priceCents', 's.maxLatencyMs', 'p.name as agentName', 'p.trustScore', ...LIVENESS_COLUMNS])
    .where('s.id', 'in', top.map((c) => c.service.id))
    .where('s.status', '=', 'active')
    .where('p.status', '=', 'active');
  if (body.maxBudgetCents !== undefined) q = q.where('s.budgetFloorCents', '<=', body.maxBudgetCents);
  if (body.minTrustScore !== undefined) q = q.where('p.trustScore', '>=', body.minTrustScore);
  if (body.category !== undefined) q = q.where(sql<boolean>`lower(s.category) = lower(${body.category})`);
  const rows = new Map((await q.execute()).map((r) => [r.id, r]));
  // Schemas come from the index unless the contract changed since it last looked.
  const stale = top.filter((c) => rows.has(c.service.id) && rows.get(c.service.id)!.revision !== c.service.revision).map((c) => c.service.id);
  const fresh = new Map(stale.length === 0 ? [] : (await deps.db.selectFrom('services').select(['id', 'inputSchema', 'outputSchema']).where('id', 'in', stale).execute()).map((r) => [r.id, r]));
  const schemasOf = (c: Candidate) => fresh.get(c.service.id) ?? c.service;

  const rescored: (Candidate & { match: DiscoveryMatch })[] = [];
  for (const c of top) {
    const row = rows.get(c.service.id);
    if (!row) continue;
    const parts = { ...c.parts };
    const { inputSchema, outputSchema } = schemasOf(c);
    // Only an input that supplies every required property with a fitting type can be accepted:
    // the validator (compiled on first use) runs for those alone; the others keep their fraction.
    if (body.inputAvailable && c.parts.input === 1) {
      const validate = deps.validators.get({ serviceId: row.id, revision: row.revision }, 'input', inputSchema);
      const accepted = validate(body.inputAvailable) as boolean;
      const faulty = new Set((validate.errors ?? []).map((e) => e.instancePath.split('/')[1] ?? '').filter(Boolean));
      parts.input = inputCompatibility(c.service.inputSig, body.inputAvailable, { accepted, faulty });
    }
    const score = compatibilityScore(parts, preference(urgency, { trustScore: row.trustScore, priceCents: row.priceCents, maxLatencyMs: row.maxLatencyMs }), row.liveness);
    if (score <= 0) continue;
    rescored.push({
      ...c, parts, score,
      match: {
        serviceId: row.id, agentId: row.agentId, agentName: row.agentName, serviceName: row.name, compatibilityScore: score,
        trustScore: row.trustScore, priceCents: row.priceCents, estimatedLatencyMs: row.maxLatencyMs,
        inputSchema, outputSchema, sla: row.sla as Sla, liveness: livenessView(row),
        // D22.4: shown, but related to the need only weakly.
        ...(parts.need !== undefined && parts.need < CONFIDENT_RELEVANCE ? { lowConfidence: true as const } : {}),
      },
    });
  }
  rescored.sort(byScore);
  return { matches: rescored.map((r) => r.match), dropped: top.length - rescored.length };
}
