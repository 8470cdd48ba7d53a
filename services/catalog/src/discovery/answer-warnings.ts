import type { DiscoverBody, DiscoverWarning } from '@aex/contracts';
import type { FilterTally, Removal } from './discover-filters.js';

/**
 * D22.4: a match whose relevance to the need is under this is shown as low-confidence. Chosen on the
 * tuning set (`eval-*.ts`) alone: none of its 58 right first matches is under it (the lowest, 0.235,
 * is a match by meaning alone, "how many yen is 250 euros"; a flag on a right answer would teach
 * agents to ignore the flag), while the best matches of 12 of its 28 needs that no service there
 * answers are. Those it misses mostly share a telling word with a service of another trade
 * ("forecast who will win the election"), which relevance alone cannot tell from a right answer.
 * Well above the floor (0.05) under which a service is no match at all.
 */
export const CONFIDENT_RELEVANCE = 0.2;

/** D22.4: how many of the closest services stand in when none clears the relevance floor. */
export const CLOSEST_SHOWN = 3;

/** What an answer was made of, for its warnings. */
export interface AnswerFacts {
  need: string | undefined;
  /** Matches returned, each with whether it is low-confidence. */
  shown: { lowConfidence?: true }[];
  /** Nothing cleared the floor: the matches are the closest under it. */
  closestOnly: boolean;
  corrections: { word: string; suggestion: string }[] | undefined;
  /** What the filters removed of the services that relate to the need confidently (a weak answer's reason). */
  confidentRemoved?: { tally: FilterTally; body: DiscoverBody };
}

/** The warnings D22.4 adds to a discover: a spelling suggestion, and why the matches are weak. */
export function answerWarnings(a: AnswerFacts): DiscoverWarning[] {
  const out: DiscoverWarning[] = [];
  if (a.need !== undefined && a.corrections?.length) out.push(spellingWarning(a.need, a.corrections));
  if (a.shown.length > 0 && a.shown.every((m) => m.lowConfidence)) {
    const message = a.closestOnly
      ? `No service clears the relevance floor for this need: the ${a.shown.length === 1 ? 'closest one is' : `${a.shown.length} closest are`} shown, marked lowConfidence, and may not answer it.`
      : 'No service relates confidently to this need: the matches shown relate to it only weakly (marked lowConfidence) and may not answer it.';
    const removed = a.confidentRemoved?.tally.removed ?? [];
    out.push(removed.length === 0 ? { code: 'NO_CONFIDENT_MATCH', message } : {
      code: 'NO_CONFIDENT_MATCH',
      // The services that do relate were turned away by the filters: say which, or the buyer looks elsewhere for nothing.
      message: `${message} The filters removed ${relateConfidently(removed.reduce((n, r) => n + r.services, 0))}: ${removed.map((r) => removalText(r, a.confidentRemoved!.body)).join('; ')}.`,
      details: { removedBy: removedByDetails(removed) },
    });
  }
  return out;
}

/** "Did you mean …": the need with each word that looks misspelled replaced by the catalog's word it was read as. */
export function spellingWarning(need: string, corrections: { word: string; suggestion: string }[]): DiscoverWarning {
  let suggestedNeed = need;
  for (const c of corrections) {
    // Words are letters and digits in any script (JavaScript's \b knows ASCII only).
    suggestedNeed = suggestedNeed.replace(new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(c.word)}(?![\\p{L}\\p{N}])`, 'giu'), c.suggestion);
  }
  const read = corrections.map((c) => `"${c.word}" as "${c.suggestion}"`).join(', ');
  return {
    code: 'SPELLING_SUGGESTION',
    message: `Did you mean "${suggestedNeed}"? Some words look misspelled and were read as the catalog's: ${read}.`,
    details: { suggestedNeed, corrections },
  };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const services = (n: number) => `${n} service${n === 1 ? '' : 's'}`;
const relateConfidently = (n: number) => `${services(n)} that relate${n === 1 ? 's' : ''} to it confidently`;

/** The categories a `category` filter turned away, most services first (at most 5). */
const topCategories = (r: Removal) => [...(r.categories ?? [])].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5).map(([c]) => c);

/** What a filter removed, in words: "7 cost more than maxBudgetCents 100 (the cheapest costs 150)". */
function removalText(r: Removal, body: DiscoverBody): string {
  const one = r.services === 1;
  switch (r.filter) {
    case 'category': {
      const where = topCategories(r);
      return `${r.services} ${one ? 'is' : 'are'} not in category "${body.category}" (${one ? 'it is' : 'they are'} in ${where.join(', ')})`;
    }
    case 'maxBudgetCents':
      return `${r.services} cost${one ? 's' : ''} more than maxBudgetCents ${body.maxBudgetCents} (the cheapest costs ${r.cheapestCents})`;
    case 'minTrustScore':
      return `${r.services} ${one ? 'has' : 'have'} a trust score below minTrustScore ${body.minTrustScore} (the highest is ${r.highestTrustScore})`;
    case 'inputAvailable':
      return `${r.services} cannot take inputAvailable (it supplies none of their required input)`;
    case 'outputRequired':
      return `${r.services} provide${one ? 's' : ''} none of the properties outputRequired asks for`;
  }
}

/**
 * Why an answer is empty (D22.4, `NO_MATCH`): no active service at all, none related to the need,
 * or what each filter removed. `related` says what the candidates are: services that relate to the
 * need, relate to it only faintly, or (without a need) every active one.
 */
export function noMatchWarning(t: FilterTally, body: DiscoverBody, activeServices: number, related: 'match' | 'faint' | 'all'): DiscoverWarning {
  if (activeServices === 0) {
    return { code: 'NO_MATCH', message: 'No service is active on the exchange: there is nothing to match yet.', details: { activeServices, candidates: 0 } };
  }
  if (t.candidates === 0) {
    return {
      code: 'NO_MATCH',
      message: `No service relates to the need: none of the ${services(activeServices)} active on the exchange shares a word or a meaning with it. Try other words.`,
      details: { activeServices, candidates: 0 },
    };
  }
  const removedBy = removedByDetails(t.removed);
  const subject = { match: 'relate to the need', faint: 'relate to the need, though only faintly', all: 'are active' }[related];
  const verb = t.candidates === 1 ? subject.replace(/^relate/, 'relates').replace(/^are/, 'is') : subject;
  const reasons = t.removed.map((r) => removalText(r, body));
  const message = reasons.length > 0
    ? `${services(t.candidates)} ${verb}, but the filters removed every one: ${reasons.join('; ')}.`
    : `${services(t.candidates)} ${verb}, but none was still on offer when the answer was made; ask again.`;
  return { code: 'NO_MATCH', message, details: { activeServices, candidates: t.candidates, removedBy } };
}

/** What each filter removed, as `details.removedBy`. */
function removedByDetails(removed: Removal[]) {
  return removed.map((r) => ({
    filter: r.filter, services: r.services,
    ...(r.cheapestCents !== undefined ? { cheapestCents: r.cheapestCents } : {}),
    ...(r.highestTrustScore !== undefined ? { highestTrustScore: r.highestTrustScore } : {}),
    ...(r.categories ? { categories: topCategories(r) } : {}),
  }));
}
