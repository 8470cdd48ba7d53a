import type { HoldState } from '../db/schema.js';

/**
 * Where the money of a transaction stands in the wallet, as this service knows it (the saga's state,
 * D9.9), and the only moves it makes. `requested`, `returning` and `settling` are commands sent and
 * not yet answered.
 */
export const HOLD_MOVES: Readonly<Record<HoldState, readonly HoldState[]>> = {
  none: ['requested'],
  // Placed; refused; or the transaction ended before the answer (returned once placed, or refused).
  requested: ['held', 'refused', 'returning'],
  // A session call's money moves without waiting for the wallet (D17.5): its reservation goes back to
  // its session (`returned`), or its price is captured out of the session's hold (`settled`), at once.
  held: ['settling', 'returning', 'returned', 'settled'],
  // Refused for funds: a later accept asks again.
  refused: ['requested'],
  // The wallet returned it; or refused a hold it had not placed, so nothing was held.
  returning: ['returned'],
  returned: [],
  settling: ['settled'],
  settled: [],
};

export const canMoveHold = (from: HoldState, to: HoldState) => from === to || HOLD_MOVES[from].includes(to);

/** Whether a saga step of the transaction's money is on its way: a request that leaves it so waits for its end (D9.9). */
export const moneyInFlight = (t: { hold: HoldState }) => t.hold === 'requested' || t.hold === 'returning' || t.hold === 'settling';
