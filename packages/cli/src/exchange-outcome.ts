import type { ExchangeError, Outcome } from '@agent-exchange/client';
import { CliError, EXIT } from './exit-codes.js';

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
