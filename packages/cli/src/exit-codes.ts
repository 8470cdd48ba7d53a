/** Exit codes (README "Exit codes"): scripts can tell a refusal from a mistake from a dead link. */
export const EXIT = {
  ok: 0,
  /** The exchange refused (any error in its envelope). */
  refused: 1,
  /** A usage mistake: unknown option, missing profile, unreadable file. */
  usage: 2,
  /** The exchange could not be reached, or did not answer in the envelope. */
  unreachable: 3,
  /** `--wait` ended without the awaited status: timed out, or the transaction ended otherwise. */
  notReached: 4,
} as const;

/** A failure the CLI reports and exits on; `details` is printed too with `--json`. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(message: string, readonly exitCode: number, readonly details?: Record<string, unknown>) {
    super(message);
  }
}
