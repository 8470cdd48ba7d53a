import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { checkAgainstContract, describeProblems } from '@aex/agent-kit';
import { awaitingNote } from '../approval-text.js';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { globalOptions } from '../global-options.js';
import { readJson } from '../json-file.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { usd } from '../text-format.js';
import { follow } from '../transaction-follow.js';

interface BuyOptions {
  input: string;
  units?: number;
  maxUnits?: number;
  maxPriceCents?: number;
  idempotencyKey?: string;
  queryId?: string;
  wait?: boolean;
  timeout: number;
}

/** `aex buy SERVICE --input FILE [--wait]`: a purchase, its input checked against the contract before it is sent. */
export function registerBuyCommand(program: Command, ctx: Context): void {
  program
    .command('buy <serviceId>')
    .description('buy a service: the input is checked against its contract, the price held; --wait follows it to the delivery')
    .requiredOption('--input <file>', 'the input, a JSON file (- for standard input)')
    .option('--units <n>', 'for per_unit and tiered pricing', int('--units'))
    .option('--max-units <n>', 'a metered purchase: holds the price of n units, pays for those the provider reports at delivery', int('--max-units'))
    .option('--max-price-cents <n>', 'your opening offer: opens a negotiation when below the price', cents('--max-price-cents'))
    .option('--idempotency-key <key>', 'makes a retry of this command safe (default: a new one each run)')
    .option('--query-id <id>', 'the queryId of the discover you found the service with: discovery learns from how the purchase ends')
    .option('--wait', 'follow the transaction until it is delivered (a live status line at a terminal)')
    .option('--timeout <seconds>', 'how long --wait waits', int('--timeout'), 600)
    .action((serviceId: string, o: BuyOptions, cmd: Command) => buy(ctx, cmd, serviceId, o));
}

async function buy(ctx: Context, cmd: Command, serviceId: string, o: BuyOptions): Promise<void> {
  const { client } = actingAgent(ctx, cmd);
  const input = readJson(o.input, 'input');
  const service = ok(await client.getService(serviceId));
  const check = checkAgainstContract(service.inputSchema, input, '/input');
  if (check.ok === false) throw new CliError(`Not sent: the input does not pass the service's inputSchema:\n${describeProblems(check.problems)}`, EXIT.usage, { problems: check.problems });
  const tx = ok(await client.createTransaction(
    { serviceId, input, ...(o.units ? { units: o.units } : {}), ...(o.maxUnits ? { maxUnits: o.maxUnits } : {}), ...(o.maxPriceCents ? { maxPriceCents: o.maxPriceCents } : {}), ...(o.queryId ? { queryId: o.queryId } : {}) },
    { idempotencyKey: o.idempotencyKey ?? randomUUID() },
  ));
  if (!o.wait) return show(ctx, cmd, tx, (d) => `Transaction ${d.id}: ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)}` : ''}.\n${awaitingNote(d)}`);
  const json = Boolean(globalOptions(cmd).json);
  if (tx.status === 'awaiting_approval' && !json) ctx.io.err(awaitingNote(tx));
  const final = await follow(ctx.io, client, tx, ['delivered'], o.timeout, json);
  show(ctx, cmd, final, (d) => (d.status === 'delivered' ? `Delivered: ${JSON.stringify(d.output)}\nAccept it with: aex verify ${d.id} --score 0-100 (or: aex disputes open ${d.id} …)\n` : `Transaction ${d.id} is ${d.status}${d.statusReason ? ` (${d.statusReason})` : ''}.\n`));
  if (final.status !== 'delivered') throw new CliError(`The transaction did not reach delivered: it is ${final.status}.`, EXIT.notReached, { status: final.status });
}
