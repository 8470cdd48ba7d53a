import type { Migration } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-idempotency-keys.js';
import * as m0003 from './0003-holds.js';
import * as m0004 from './0004-outbox-claims.js';
import * as m0005 from './0005-hold-refunds.js';
import * as m0006 from './0006-children.js';
import * as m0007 from './0007-processed-age.js';
import * as m0008 from './0008-write-guard.js';
import * as m0009 from './0009-stripe-events.js';
import * as m0010 from './0010-payout-accounts.js';
import * as m0011 from './0011-session-captures.js';

export const migrations: Record<string, Migration> = { '0001-initial': m0001, '0002-idempotency-keys': m0002, '0003-holds': m0003, '0004-outbox-claims': m0004, '0005-hold-refunds': m0005, '0006-children': m0006, '0007-processed-age': m0007, '0008-write-guard': m0008, '0009-stripe-events': m0009, '0010-payout-accounts': m0010, '0011-session-captures': m0011 };

/** The wallet service's schema and migrations: what it migrates at start and what `migrate.ts` runs. */
export const database = { schema: 'wallet', migrations };
