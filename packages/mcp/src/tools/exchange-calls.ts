import type { ExchangeError, Outcome } from '@agent-exchange/client';
import { waitForStatus } from '@aex/agent-kit';
import { ToolFailure, type ToolContext } from './tool.js';

/** The data of a successful call, or a ToolFailure that says what the exchange answered. */
export function ok<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.data;
  throw new ToolFailure(explain(outcome.error));
}

/** An exchange error in words a model (and its human) can act on. */
export function explain(error: ExchangeError): string {
  if (error.code === 'NETWORK_ERROR') return `${error.message} Is the exchange running, and is AEX_URL right?`;
  const lines = [`${error.code} (HTTP ${error.status}): ${error.message}`];
  for (const e of error.errors.slice(1)) lines.push(`${e.code}: ${e.message}${e.field ? ` (${e.field})` : ''}`);
  if (error.errors[0]?.field) lines.push(`field: ${error.errors[0].field}`);
  if (error.status === 401) lines.push('The API key or signing key this server was started with is not accepted: check AEX_API_KEY and AEX_SIGNING_KEY (or the profile).');
  if (error.requestId) lines.push(`request id: ${error.requestId}`);
  return lines.join('\n');
}

export async function waitFor(ctx: ToolContext, transactionId: string, until: readonly string[], waitSeconds: number | undefined, label: string) {
  const timeoutMs = Math.min(ctx.maxWaitMs, waitSeconds === undefined ? ctx.maxWaitMs : waitSeconds * 1000);
  const outcome = await waitForStatus(ctx.client, transactionId, until, {
    timeoutMs,
    intervalMs: ctx.pollMs,
    signal: ctx.signal,
    onStatus: (tx, ms) => ctx.progress(`${label}: ${tx.status}${tx.statusReason ? ` (${tx.statusReason})` : ''} after ${(ms / 1000).toFixed(1)} s`),
  });
  if ('error' in outcome) throw new ToolFailure(explain(outcome.error));
  return outcome;
}

/** The contract of a service and whether it can be bought. */
export async function contract(ctx: ToolContext, serviceId: string) {
  return ok(await ctx.client.getService(serviceId));
}
