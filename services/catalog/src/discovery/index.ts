import type { catalogOps } from '@aex/contracts';
import type { OperationHandler, Stoppable } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import { discover } from './discover.js';
import { DiscoveryIndex, type IndexedService } from './index-store.js';
import { PostgresLexicon } from './lexicon.js';
import { LexicalSemanticScorer } from './scorer.js';
import { startQueryRetention } from './retention.js';
import { startLearning, type LearnedRanking } from '../learning/index.js';

export interface Discovery extends Stoppable {
  index: DiscoveryIndex;
  /** D22.2: what this replica learned from purchases, blended into rankings by need. */
  learning: LearnedRanking;
  handler: OperationHandler<(typeof catalogOps)['discover']>;
}

/** Loads the discovery index (and keeps it fresh) and returns the discover operation (D8). */
export async function startDiscovery(deps: CatalogDeps): Promise<Discovery> {
  const scorer = new LexicalSemanticScorer<IndexedService>(new PostgresLexicon(deps.db), deps.thesaurus);
  const index = new DiscoveryIndex(deps.db, scorer, deps.meaning, deps.logger);
  await index.start();
  if (scorer.meaningScan === 'js') {
    deps.logger.warn('WebAssembly SIMD is not available in this runtime: each discover compares the need with every service in plain JavaScript, about 30 times slower (docs/discovery.md)');
  }
  const retention = startQueryRetention(deps.db, deps.logger, deps.now);
  const learning = await startLearning(deps);
  return {
    index,
    learning: learning.ranking,
    handler: discover(deps, index, learning.ranking),
    async stop() {
      await learning.stop();
      await retention.stop();
      await index.stop();
    },
  };
}
