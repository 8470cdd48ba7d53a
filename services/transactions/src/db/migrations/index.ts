import type { Migration } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-outbox-claims.js';
import * as m0003 from './0003-review-window.js';
import * as m0004 from './0004-disputes.js';
import * as m0005 from './0005-active-transactions.js';
import * as m0006 from './0006-processed-age.js';
import * as m0007 from './0007-activity-counts.js';
import * as m0008 from './0008-write-guard.js';
import * as m0009 from './0009-approvals.js';
import * as m0010 from './0010-account-views.js';
import * as m0011 from './0011-ending-and-totals.js';
import * as m0012 from './0012-metered.js';
import * as m0013 from './0013-receipts.js';
import * as m0014 from './0014-sessions.js';
import * as m0015 from './0015-session-spending.js';
import * as m0016 from './0016-delivery-signature-scheme.js';
import * as m0017 from './0017-x402.js';
import * as m0018 from './0018-query-id.js';
import * as m0019 from './0019-names.js';

export const migrations: Record<string, Migration> = { '0001-initial': m0001, '0002-outbox-claims': m0002, '0003-review-window': m0003, '0004-disputes': m0004, '0005-active-transactions': m0005, '0006-processed-age': m0006, '0007-activity-counts': m0007, '0008-write-guard': m0008, '0009-approvals': m0009, '0010-account-views': m0010, '0011-ending-and-totals': m0011, '0012-metered': m0012, '0013-receipts': m0013, '0014-sessions': m0014, '0015-session-spending': m0015, '0016-delivery-signature-scheme': m0016, '0017-x402': m0017, '0018-query-id': m0018, '0019-names': m0019 };

/** The transactions service's schema and migrations: what it migrates at start and what `migrate.ts` runs. */
export const database = { schema: 'transactions', migrations };
