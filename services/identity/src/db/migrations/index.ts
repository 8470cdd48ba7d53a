import type { Migration } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-wallet-redrive.js';
import * as m0003 from './0003-idempotency-keys.js';
import * as m0004 from './0004-signing-key-owners.js';
import * as m0005 from './0005-outbox-claims.js';
import * as m0006 from './0006-trust-outcomes.js';
import * as m0007 from './0007-operator-actions.js';
import * as m0008 from './0008-children.js';
import * as m0009 from './0009-trust-sums.js';
import * as m0010 from './0010-trust-outcome-kept.js';
import * as m0011 from './0011-processed-age.js';
import * as m0012 from './0012-write-guard.js';

export const migrations: Record<string, Migration> = {
  '0001-initial': m0001,
  '0002-wallet-redrive': m0002,
  '0003-idempotency-keys': m0003,
  '0004-signing-key-owners': m0004,
  '0005-outbox-claims': m0005,
  '0006-trust-outcomes': m0006,
  '0007-operator-actions': m0007,
  '0008-children': m0008,
  '0009-trust-sums': m0009,
  '0010-trust-outcome-kept': m0010,
  '0011-processed-age': m0011,
  '0012-write-guard': m0012,
};

/** The identity service's schema and migrations: what it migrates at start and what `migrate.ts` runs. */
export const database = { schema: 'identity', migrations };
