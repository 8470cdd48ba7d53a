import type { DiscoverFilter } from '@aex/contracts';
import type { IndexedService } from './index-store.js';

/** The filters of a discover as the index compares them (the category lower-cased, D8.1, D8.4). */
export interface DiscoverFilters {
  category?: string;
  maxBudgetCents?: number;
  minTrustScore?: number;
}

/**
 * The first filter that turns a service away, or null when it passes them all — in the order the
 * filters apply, so each service turned away is counted once. Its provider must be active; that is
 * not a filter of the query but whether the service is on offer at all.
 */
export function filteredBy(s: IndexedService, f: DiscoverFilters): 'category' | 'maxBudgetCents' | 'minTrustScore' | null {
  if (f.category !== undefined && s.category !== f.category) return 'category';
  if (f.maxBudgetCents !== undefined && s.budgetFloorCents > f.maxBudgetCents) return 'maxBudgetCents';
  if (f.minTrustScore !== undefined && s.provider.trustScore < f.minTrustScore) return 'minTrustScore';
  return null;
}

/** What one filter removed: how many, and the nearest value it turned away. */
export interface Removal {
  filter: DiscoverFilter;
  services: number;
  cheapestCents?: number;
  highestTrustScore?: number;
  /** By category, how many (for `category`). */
  categories?: Map<string, number>;
}

/** What the filters made of an answer's candidates (D22.4): how many there were, what each filter removed. */
export interface FilterTally {
  candidates: number;
  removed: Removal[];
}

const ORDER: DiscoverFilter[] = ['category', 'maxBudgetCents', 'minTrustScore', 'inputAvailable', 'outputRequired'];

/**
 * Counts, over the services an empty answer had to choose from, which filter removed each: the
 * query's filters first, then an input or output the service cannot take at all (`io`, which only
 * removes services when there is no need). Services of providers that are not active are not
 * candidates. One pass over the candidates, and only for an answer that came out empty.
 */
export function tallyFilters(candidates: Iterable<IndexedService | undefined>, f: DiscoverFilters, io: (s: IndexedService) => 'inputAvailable' | 'outputRequired' | null): FilterTally {
  const byFilter = new Map<DiscoverFilter, Removal>();
  let count = 0;
  for (const s of candidates) {
    if (!s || s.provider.status !== 'active') continue;
    count += 1;
    const filter = filteredBy(s, f) ?? io(s);
    if (filter === null) continue;
    let r = byFilter.get(filter);
    if (!r) byFilter.set(filter, (r = { filter, services: 0 }));
    r.services += 1;
    if (filter === 'maxBudgetCents') r.cheapestCents = Math.min(r.cheapestCents ?? Infinity, s.budgetFloorCents);
    if (filter === 'minTrustScore') r.highestTrustScore = Math.max(r.highestTrustScore ?? 0, s.provider.trustScore);
    if (filter === 'category') {
      r.categories ??= new Map();
      r.categories.set(s.categoryExact, (r.categories.get(s.categoryExact) ?? 0) + 1);
    }
  }
  return { candidates: count, removed: ORDER.flatMap((k) => byFilter.get(k) ?? []) };
}
