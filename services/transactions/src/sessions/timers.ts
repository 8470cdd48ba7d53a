import type { TimerHandler } from '@aex/platform';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { SESSION_TIMERS, type SessionCommand } from '../domain/session.js';

/** A session's durable timers (D17.6): its `expiresAt` passed (it closes), an approval not decided in time (D10.3). */
export function sessionTimers(deps: TransactionDeps): Record<string, TimerHandler<Database>> {
  const fire = (command: SessionCommand): TimerHandler<Database> => async (trx, timer, work) => void (await deps.sessions.within(trx, work, timer.key, command));
  return { [SESSION_TIMERS.expiry]: fire({ kind: 'expire' }), [SESSION_TIMERS.approvalExpiry]: fire({ kind: 'approvalExpired' }) };
}
