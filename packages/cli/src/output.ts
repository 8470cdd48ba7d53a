import type { ExchangeError, Outcome } from '@agent-exchange/client';

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

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Whether standard output is a terminal (a live status line then; plain lines otherwise). */
  isTTY: boolean;
}

export const processIo: Io = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  isTTY: Boolean(process.stdout.isTTY),
};

/** The data of a successful call, or a CliError with the exchange's code, message and request id. */
export function ok<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.data;
  throw fromExchange(outcome.error);
}

export function fromExchange(error: ExchangeError): CliError {
  if (error.code === 'NETWORK_ERROR' || error.code === 'INVALID_RESPONSE') return new CliError(`${error.message} Is the exchange running, and is the profile's URL right?`, EXIT.unreachable, { code: error.code });
  const lines = [`${error.code}: ${error.message}`];
  for (const e of error.errors.slice(1)) lines.push(`${e.code}: ${e.message}`);
  for (const e of error.errors) if (e.field) lines.push(`  at ${e.field}`);
  if (error.requestId) lines.push(`request id ${error.requestId}`);
  return new CliError(lines.join('\n'), EXIT.refused, { code: error.code, status: error.status, errors: error.errors, requestId: error.requestId });
}

export type Column<T> = [header: string, value: (row: T) => unknown];

/** A plain text table: a header, then one line per row, columns padded to their widest cell. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = [columns.map(([h]) => h), ...rows.map((r) => columns.map(([, v]) => cell(v(r))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

/** Key/value lines for one record. */
export function record(pairs: Array<[string, unknown]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join('\n') + '\n';
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Cents as dollars for people: 1234 → "$12.34". */
export const usd = (cents: number | null | undefined) => (cents === null || cents === undefined ? '-' : `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`);
