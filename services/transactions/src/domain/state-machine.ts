import { AppError, TERMINAL_STATUSES, type TransactionStatus } from '@aex/contracts';

/**
 * D9.7: what each request may do, from which statuses. Anything else is 409 INVALID_STATE with the
 * current status in `details`. Moves made by the saga and the timers are listed in `MOVES`.
 */
export const ACTION_SOURCES = {
  negotiate: ['negotiating'],
  start: ['funds_held'],
  deliver: ['funds_held', 'executing', 'validation_failed'],
  verify: ['delivered'],
  cancel: ['initiated', 'negotiating', 'awaiting_approval', 'matched', 'funds_held'],
  expire: ['funds_held', 'executing', 'validation_failed'],
  dispute: ['delivered'],
  // D10.3: the consumer's account owner decides.
  approve: ['awaiting_approval'],
  deny: ['awaiting_approval'],
} as const satisfies Record<string, readonly TransactionStatus[]>;

export type Action = keyof typeof ACTION_SOURCES;

/** Every status move the exchange makes (D9.7, D10.3, D11.3, D11.4); a decision makes no other. */
export const MOVES: Readonly<Record<TransactionStatus, readonly TransactionStatus[]>> = {
  initiated: ['funds_held', 'failed', 'cancelled', 'negotiating', 'awaiting_approval'],
  negotiating: ['matched', 'cancelled', 'awaiting_approval'],
  // D10.3: approved, its hold placed — after a negotiation through `matched`, as an accept would; denied, expired or cancelled.
  awaiting_approval: ['funds_held', 'matched', 'cancelled'],
  matched: ['funds_held', 'cancelled'],
  funds_held: ['executing', 'delivered', 'validation_failed', 'failed', 'expired', 'cancelled'],
  executing: ['delivered', 'validation_failed', 'failed', 'expired'],
  validation_failed: ['delivered', 'validation_failed', 'failed', 'expired'],
  delivered: ['settled', 'disputed'],
  // D12.8: consumer_wins → failed; provider_wins, partial_refund → settled; provider_redo → executing.
  disputed: ['settled', 'failed', 'executing'],
  settled: [],
  cancelled: [],
  expired: [],
  failed: [],
};

export function isTerminal(status: TransactionStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function canMove(from: TransactionStatus, to: TransactionStatus): boolean {
  return MOVES[from].includes(to);
}

/** Whether `action` may run on a transaction in `status`. */
export function isAllowed(action: Action, status: TransactionStatus): boolean {
  return (ACTION_SOURCES[action] as readonly TransactionStatus[]).includes(status);
}

/** The 409 INVALID_STATE refusing `action` on a transaction in `status`; undefined when it may run. */
export function actionRefusal(action: Action, status: TransactionStatus): AppError | undefined {
  if (isAllowed(action, status)) return undefined;
  return new AppError('INVALID_STATE', `A transaction in status ${status} cannot be ${PAST[action]}.`, { details: { status, allowedFrom: ACTION_SOURCES[action] } });
}

const PAST: Record<Action, string> = {
  negotiate: 'negotiated', start: 'started', deliver: 'delivered', verify: 'verified', cancel: 'cancelled', expire: 'expired', dispute: 'disputed',
  approve: 'approved', deny: 'denied',
};
