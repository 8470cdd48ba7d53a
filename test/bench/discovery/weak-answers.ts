import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import type { DiscoverView } from '@aex/contracts';
import type { EvalQuery } from './eval-queries.js';

/**
 * D22.4 measured: a need no service of the catalog answers should come back with a warning saying
 * so (`NO_CONFIDENT_MATCH`, or `NO_MATCH` when nothing is shown), never as a bare list; a need whose
 * first match is right should not be warned about.
 */
export interface WeakAnswerFigures {
  /** Needs with no right service, and how many of them were answered with such a warning. */
  unanswerable: number;
  warned: number;
  /** Labelled needs whose first match was right, and how many of those were still warned about. */
  rightFirst: number;
  rightButWarned: number;
}

/** Whether an answer says it has nothing confident to offer. */
export const saysWeak = (found: Pick<DiscoverView, 'warnings'>) => found.warnings.some((w) => w.code === 'NO_CONFIDENT_MATCH' || w.code === 'NO_MATCH');

/** Warnings that mean the ranking itself was degraded (meaning missing): a quality run cannot go on with them. */
export const degraded = (found: Pick<DiscoverView, 'warnings'>) => found.warnings.filter((w) => w.code === 'SEMANTIC_RANKING_OFF' || w.code === 'SEMANTIC_RANKING_UNAVAILABLE');

/**
 * Asks for each need with no right service and counts the warned answers; `labelled` are the
 * labelled needs already asked, with their first match and whether the answer warned.
 */
export async function weakAnswers(client: ExchangeClient, unanswerable: EvalQuery[], labelled: { query: EvalQuery; first: string | undefined; weak: boolean }[]): Promise<WeakAnswerFigures> {
  let warned = 0;
  for (const q of unanswerable) if (saysWeak(unwrap(await client.discover({ need: q.need, limit: 10 })))) warned += 1;
  const right = labelled.filter((l) => l.query.relevant.includes(l.first ?? ''));
  return { unanswerable: unanswerable.length, warned, rightFirst: right.length, rightButWarned: right.filter((l) => l.weak).length };
}

export function printWeakAnswers(f: WeakAnswerFigures): void {
  if (f.unanswerable > 0) console.log(`needs with no right service answered with a warning (D22.4): ${f.warned} of ${f.unanswerable}`);
  console.log(`needs whose first match is right, answered with a warning all the same: ${f.rightButWarned} of ${f.rightFirst}`);
}
