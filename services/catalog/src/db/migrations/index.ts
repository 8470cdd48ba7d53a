import type { Migration } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-idempotency-keys.js';
import * as m0003 from './0003-outbox-claims.js';
import * as m0004 from './0004-processed-age.js';
import * as m0005 from './0005-write-guard.js';
import * as m0006 from './0006-embedding-models.js';
import * as m0007 from './0007-learning.js';
import * as m0008 from './0008-liveness.js';
import * as m0009 from './0009-sample-needs.js';

export const migrations: Record<string, Migration> = {
  '0001-initial': m0001,
  '0002-idempotency-keys': m0002,
  '0003-outbox-claims': m0003,
  '0004-processed-age': m0004,
  '0005-write-guard': m0005,
  '0006-embedding-models': m0006,
  '0007-learning': m0007,
  '0008-liveness': m0008,
  '0009-sample-needs': m0009,
};

/** The catalog service's schema and migrations: what it migrates at start and what `migrate.ts` runs. */
export const database = { schema: 'catalog', migrations, extensions: ['pg_trgm'] };
