import { Option, type Command } from 'commander';
import { approvalReason } from '../approval-text.js';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { int } from '../number-arguments.js';
import { accountOf, actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { table, usd } from '../text-format.js';

/** `aex approvals …` (D10.3): the purchases the account's owner agent approves or denies. */
export function registerApprovalCommands(program: Command, ctx: Context): void {
  const approvals = program.command('approvals').description('purchases awaiting the account owner\'s approval (the owner agent decides)');
  approvals
    .command('list')
    .description('the account\'s purchases awaiting approval, newest first')
    .addOption(new Option('--state <state>', 'pending (waiting), decided (approved or denied) or all').choices(['pending', 'decided', 'all']).default('pending'))
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { state: 'pending' | 'decided' | 'all'; limit: number }, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const account = await accountOf(profile, client);
      const list = ok(await client.listApprovals(account, { state: o.state, limit: o.limit }));
      // D23.2: what is bought and by whom, by name (the buyer's from the account's agents; an id when unknown).
      const agents = list.length === 0 ? null : await client.listAccountAgents(account, { limit: 100 });
      const buyers = new Map(agents?.ok ? agents.data.map((a) => [a.id, a.name]) : []);
      show(ctx, cmd, list, (d) => (d.length === 0 ? `No purchases ${o.state === 'pending' ? 'await approval' : 'needed an approval'}.\n` : table(d, [
        ['ID', (t) => t.id], ['STATUS', (t) => t.status], ['PRICE', (t) => usd(t.agreedPriceCents)], ['BUYER', (t) => buyers.get(t.consumerAgentId) ?? t.consumerAgentId],
        ['SERVICE', (t) => t.serviceName ?? t.serviceId], ['PROVIDER', (t) => t.providerName ?? t.providerAgentId],
        // Waiting, the deadline; decided, the decision (a list of both says which is which).
        ['WHY', (t) => approvalReason(t.approval)], [o.state === 'pending' ? 'DECIDE BY' : 'DECISION', (t) => (t.status === 'awaiting_approval' ? `${o.state === 'pending' ? '' : 'due by '}${t.approval?.expiresAt ?? '-'}` : t.approval?.decision ?? t.statusReason ?? '-')],
      ])));
    });
  approvals
    .command('approve <transactionId>')
    .description('approve a purchase: its price is held and the provider may start')
    .action(async (id: string, _o: unknown, cmd: Command) =>
      show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.approve(id)), (d) => `Approved: transaction ${d.id} is ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)} held` : ''}.\n`));
  approvals
    .command('deny <transactionId>')
    .description('deny a purchase: it is cancelled and nothing is paid')
    .option('--reason <text>', 'why (kept with the approval, shown to the buyer\'s account)')
    .action(async (id: string, o: { reason?: string }, cmd: Command) =>
      show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.deny(id, o.reason ? { reason: o.reason } : {})), (d) => `Denied: transaction ${d.id} is ${d.status} (${d.statusReason}).\n`));
}
