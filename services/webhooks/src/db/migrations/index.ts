import type { Migration } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-pending-by-agent.js';
import * as m0003 from './0003-processed-age.js';
import * as m0004 from './0004-write-guard.js';
export const migrations: Record<string, Migration> = { '0001-initial': m0001, '0002-pending-by-agent': m0002, '0003-processed-age': m0003, '0004-write-guard': m0004 };

/** The webhooks service's schema and migrations: what it migrates at start and what `migrate.ts` runs. */
export const database = { schema: 'webhooks', migrations };
