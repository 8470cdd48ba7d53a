import { Option, type Command } from 'commander';
import type { ExchangeClient } from '@agent-exchange/client';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { record, table, usd } from '../text-format.js';

interface NegotiateOptions {
  counter?: number;
  accept?: boolean;
  reject?: boolean;
  withdraw?: boolean;
  message?: string;
}

/** `aex transactions …` (`aex tx …`): the agent's transactions as consumer or provider, and negotiation. */
export function registerTransactionCommands(program: Command, ctx: Context): void {
  const transactions = program.command('transactions').alias('tx').description('transactions, as consumer or provider');
  transactions
    .command('list')
    .option('--role <role>', 'consumer or provider')
    .option('--status <status>')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .description('the agent\'s transactions, newest first')
    .action(async (o: { role?: 'consumer' | 'provider'; status?: string; limit: number }, cmd: Command) => {
      const list = ok(await actingAgent(ctx, cmd).client.listTransactions({ limit: o.limit, ...(o.role ? { role: o.role } : {}), ...(o.status ? { status: o.status } : {}) } as Parameters<ExchangeClient['listTransactions']>[0]));
      show(ctx, cmd, list, (d) => table(d, [['ID', (t) => t.id], ['STATUS', (t) => t.status], ['PRICE', (t) => usd(t.agreedPriceCents)], ['SERVICE', (t) => t.serviceName ?? t.serviceId], ['PROVIDER', (t) => t.providerName ?? t.providerAgentId], ['UPDATED', (t) => t.updatedAt]]));
    });
  transactions
    .command('show <transactionId>')
    .description('one transaction, with its negotiation')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { client } = actingAgent(ctx, cmd);
      const tx = ok(await client.getTransaction(id));
      show(ctx, cmd, tx, (d) => record([['id', d.id], ['status', d.status], ['reason', d.statusReason], ['price', usd(d.agreedPriceCents)], ['fee', usd(d.platformFeeCents)], ['consumer', d.consumerAgentId], ['provider', d.providerAgentId], ['service', `${d.serviceId} ${d.serviceVersion}`], ['input', d.input], ['output', d.output], ['expires', d.expiresAt]]));
    });
  transactions
    .command('cancel <transactionId>')
    .description('cancel before delivery; held funds return')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.cancel(id)), (d) => `Transaction ${d.id} is ${d.status}.\n`));
  transactions
    .command('negotiate <transactionId>')
    .description('answer a negotiation on your turn')
    .addOption(new Option('--counter <cents>', 'counter-offer this price').argParser(cents('--counter')))
    .addOption(new Option('--accept', 'accept the latest offer').conflicts(['counter', 'reject', 'withdraw']))
    .addOption(new Option('--reject', 'reject it: the negotiation ends').conflicts(['counter', 'withdraw']))
    .addOption(new Option('--withdraw', 'withdraw: the negotiation ends').conflicts(['counter']))
    .option('--message <text>')
    .action(async (id: string, o: NegotiateOptions, cmd: Command) => {
      const type = o.counter !== undefined ? 'counter_offer' : o.accept ? 'accept' : o.reject ? 'reject' : o.withdraw ? 'withdraw' : undefined;
      if (!type) throw new CliError('Say what to do: --counter CENTS, --accept, --reject or --withdraw.', EXIT.usage);
      const tx = ok(await actingAgent(ctx, cmd).client.negotiate(id, { type, terms: o.counter !== undefined ? { priceCents: o.counter } : {}, ...(o.message ? { message: o.message } : {}) }));
      show(ctx, cmd, tx, (d) => `Transaction ${d.id} is ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)}` : ''}.\n`);
    });
}
