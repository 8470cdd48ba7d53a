import type { Stoppable } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import { consumePurchaseOutcomes } from './evidence-consumer.js';
import { LearnedRanking } from './learned-ranking.js';

export { LearnedRanking } from './learned-ranking.js';

export interface Learning extends Stoppable {
  ranking: LearnedRanking;
}

/**
 * D22.2: discovery that learns from purchases — the consumer that keeps evidence of purchases that
 * came from a discover, and this replica's learned ranking over it. Evidence is kept even with
 * `DISCOVERY_LEARNING=false` (turning it on later uses it); only the ranking then ignores it.
 */
export async function startLearning(deps: CatalogDeps): Promise<Learning> {
  const ranking = new LearnedRanking(deps.db, deps.meaning, deps.thesaurus, deps.logger, deps.config.DISCOVERY_LEARNING === 'true');
  await ranking.start();
  const consumer = await consumePurchaseOutcomes(deps);
  return {
    ranking,
    async stop() {
      await consumer.stop();
      await ranking.stop();
    },
  };
}
