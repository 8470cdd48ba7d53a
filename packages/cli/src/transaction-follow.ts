import type { ExchangeClient } from '@agent-exchange/client';
import { waitForStatus } from '@aex/agent-kit';
import { ok } from './exchange-outcome.js';
import { CliError, EXIT } from './exit-codes.js';
import type { Io } from './io.js';

export type Tx = Extract<Awaited<ReturnType<ExchangeClient['getTransaction']>>, { ok: true }>['data'];

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Follows a transaction until one of `until` or an end: a status line redrawn in place at a
 * terminal (with the time spent), one line per status otherwise (and nothing but the result with --json).
 */
export async function follow(io: Io, client: ExchangeClient, tx: Tx, until: readonly string[], timeoutSeconds: number, json: boolean): Promise<Tx> {
  const live = io.isTTY && !json;
  let status = tx.status;
  let frame = 0;
  const started = Date.now();
  const draw = () => io.out(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${tx.id.slice(0, 8)}  ${status}  ${((Date.now() - started) / 1000).toFixed(1)}s`);
  const ticker = live ? setInterval(draw, 120) : undefined;
  try {
    const outcome = await waitForStatus(client, tx.id, until, {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: 250,
      onStatus: (t) => {
        status = t.status;
        if (live) draw();
        else if (!json) io.out(`${new Date().toISOString()}  ${t.id}  ${t.status}${t.statusReason ? ` (${t.statusReason})` : ''}\n`);
      },
    });
    if ('error' in outcome) throw ok({ ok: false, status: outcome.error.status, error: outcome.error, headers: null });
    if (!outcome.reached && outcome.timedOut) throw new CliError(`Still ${outcome.transaction.status} after ${timeoutSeconds} s; follow it with: aex tx show ${tx.id}`, EXIT.notReached, { status: outcome.transaction.status });
    return outcome.transaction;
  } finally {
    if (ticker) clearInterval(ticker);
    if (live) io.out(`\r\x1b[2K✓ ${tx.id.slice(0, 8)}  ${status}  ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  }
}
