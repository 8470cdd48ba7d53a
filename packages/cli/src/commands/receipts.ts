import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ExchangeClient, ReceiptVerificationError, verifyReceipt } from '@agent-exchange/client';
import type { ReceiptKeysView } from '@aex/contracts';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { actingAgent, exchangeUrl } from '../profile-loading.js';
import { show } from '../show.js';
import { usd } from '../text-format.js';

/**
 * `aex receipt get|verify` (D18): an ended purchase's signed receipt, and its check with the
 * exchange's public keys alone — fetched from the exchange, or from a JWK set file for offline use.
 */
export function registerReceiptCommands(program: Command, ctx: Context): void {
  const receipt = program.command('receipt').description('signed receipts of ended purchases (D18)');
  receipt
    .command('get <transactionId>')
    .description('the receipt of a purchase you took part in (a compact JWS) and what it states')
    .option('--out <file>', 'also write the JWS to this file (for `aex receipt verify`)')
    .action(async (id: string, o: { out?: string }, cmd: Command) => {
      const r = ok(await actingAgent(ctx, cmd).client.receipt(id));
      if (o.out) writeFileSync(o.out, `${r.receipt}\n`);
      show(ctx, cmd, r, (d) => `${summary(d.claims)}${o.out ? `Written to ${o.out}.\n` : `${d.receipt}\n`}`);
    });
  receipt
    .command('verify <file>')
    .description('check a receipt (a file holding the JWS, - for standard input) against the exchange\'s keys')
    .option('--jwks <file>', 'a JWK set saved earlier (/.well-known/jwks.json): no request to the exchange')
    .action(async (file: string, o: { jwks?: string }, cmd: Command) => {
      const jws = read(file, 'receipt').trim();
      const keys = o.jwks ? (JSON.parse(read(o.jwks, 'JWK set')) as ReceiptKeysView) : await new ExchangeClient({ baseUrl: exchangeUrl(ctx, cmd) }).receiptKeys();
      try {
        const verified = await verifyReceipt(jws, keys);
        show(ctx, cmd, { valid: true, kid: verified.kid, iss: verified.iss, receipt: verified.receipt }, (d) => `Valid: signed by ${d.iss} (key ${d.kid}).\n${summary(d.receipt)}`);
      } catch (err) {
        if (err instanceof ReceiptVerificationError) throw new CliError(`Not valid: ${err.message}`, EXIT.notReached, { valid: false });
        throw err;
      }
    });
}

function read(path: string, what: string): string {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`, EXIT.usage);
  }
}

const summary = (c: { transactionId: string; status: string; priceCents: number | null; platformFeeCents: number; refundedCents: number; units: number | null; sessionId: string | null; outcome: string | null }) =>
  `Transaction ${c.transactionId}: ${c.status}${c.outcome ? ` (dispute: ${c.outcome})` : ''} · price ${usd(c.priceCents ?? 0)} · fee ${usd(c.platformFeeCents)} · refunded ${usd(c.refundedCents)}`
  + `${c.units !== null ? ` · ${c.units} unit${c.units === 1 ? '' : 's'}` : ''}${c.sessionId ? ` · session ${c.sessionId}` : ''}\n`;
