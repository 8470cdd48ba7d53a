import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { record, table, usd } from '../text-format.js';

/** `aex wallet …`: the agent's wallet, or (owner agent) another agent's of the account. */
export function registerWalletCommands(program: Command, ctx: Context): void {
  const wallet = program.command('wallet').description('the agent\'s wallet (the owner agent may name another agent of the account)');
  const walletOf = (cmd: Command, o: { agent?: string }) => o.agent ?? actingAgent(ctx, cmd).profile.agentId;
  wallet
    .command('balance')
    .description('balance, held and available')
    .option('--agent <agentId>', 'another agent of the account')
    .action(async (o: { agent?: string }, cmd: Command) => {
      const w = ok(await actingAgent(ctx, cmd).client.getWallet(walletOf(cmd, o)));
      show(ctx, cmd, w, (d) => record([['balance', usd(d.balanceCents)], ['held', usd(d.heldCents)], ['available', usd(d.availableCents)], ['earned', usd(d.lifetimeEarnedCents)], ['spent', usd(d.lifetimeSpentCents)]]));
    });
  wallet
    .command('fund <amountCents>')
    .description('add money (sandbox: at once; Stripe: open the checkout URL)')
    .option('--agent <agentId>', 'another agent of the account')
    .action(async (amount: string, o: { agent?: string }, cmd: Command) => {
      const f = ok(await actingAgent(ctx, cmd).client.fund(walletOf(cmd, o), cents('amount')(amount), { idempotencyKey: randomUUID() }));
      show(ctx, cmd, f, (d) => (d.funded ? `Funded: the balance is now ${usd(d.newBalanceCents)}.\n` : `Pay at ${d.checkoutUrl} to fund the wallet.\n`));
    });
  wallet
    .command('withdraw <amountCents>')
    .description('pay money out of the available balance (Stripe: to the account\'s linked account)')
    .option('--agent <agentId>', 'another agent of the account')
    .option('--idempotency-key <key>', 'makes a retry of this command pay once (default: a new one each run)')
    .action(async (amount: string, o: { agent?: string; idempotencyKey?: string }, cmd: Command) => {
      const w = ok(await actingAgent(ctx, cmd).client.withdraw(walletOf(cmd, o), cents('amount')(amount), { idempotencyKey: o.idempotencyKey ?? randomUUID() }));
      show(ctx, cmd, w, (d) => `Payout ${d.payoutId}: ${usd(d.amountCents)}, arriving by ${d.estimatedArrival}.\n`);
    });
  wallet
    .command('ledger')
    .description('the wallet\'s ledger entries, oldest first')
    .option('--agent <agentId>', 'another agent of the account')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { agent?: string; limit: number }, cmd: Command) => {
      const entries = ok(await actingAgent(ctx, cmd).client.ledger(walletOf(cmd, o), { limit: o.limit }));
      show(ctx, cmd, entries, (d) => table(d, [['WHEN', (e) => e.createdAt], ['TYPE', (e) => e.txType], ['AMOUNT', (e) => usd(e.amountCents)], ['BALANCE', (e) => usd(e.balanceAfterCents)], ['TRANSACTION', (e) => e.transactionId]]));
    });
}
