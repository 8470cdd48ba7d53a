/**
 * D14.4: the delay before each of a delivery's attempts (`WEBHOOK_RETRY_DELAYS_MS`, 8 of them: 0,
 * 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). A delivery starts with as many attempts left as there
 * are delays; after a failure with `attemptsLeft` still allowed, the next attempt waits the delay of
 * its place in the schedule; with none left it is dead-lettered.
 */
export function afterFailure(delays: readonly number[], attemptsLeft: number, now: Date): { status: 'pending'; nextAttemptAt: Date } | { status: 'dead' } {
  if (attemptsLeft <= 0) return { status: 'dead' };
  const place = Math.max(0, Math.min(delays.length - 1, delays.length - attemptsLeft));
  return { status: 'pending', nextAttemptAt: new Date(now.getTime() + delays[place]!) };
}

/** When a new delivery's first attempt is due. */
export const firstAttemptAt = (delays: readonly number[], now: Date) => new Date(now.getTime() + (delays[0] ?? 0));
