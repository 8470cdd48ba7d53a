import { CommanderError } from 'commander';
import { UsageError } from '@aex/agent-kit';
import { CliError, EXIT } from './exit-codes.js';
import type { Io } from './io.js';

/**
 * What a failed run prints on standard error (a line for people, or JSON with --json) and the exit
 * code it ends with. Commander has printed its own usage errors already: only their code is left.
 */
export function reportFailure(err: unknown, io: Io, json: boolean): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  const e = err instanceof CliError ? err : err instanceof UsageError ? new CliError(err.message, EXIT.usage) : new CliError(`unexpected error: ${(err as Error).stack ?? String(err)}`, 1);
  io.err(json ? `${JSON.stringify({ error: { message: e.message, exitCode: e.exitCode, ...e.details } })}\n` : `aex: ${e.message}\n`);
  return e.exitCode;
}
