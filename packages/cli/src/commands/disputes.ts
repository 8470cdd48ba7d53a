import { Option, type Command } from 'commander';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { cents } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { record, usd } from '../text-format.js';

/** `aex disputes …`: the consumer opens, decides or withdraws a dispute; the provider responds. */
export function registerDisputeCommands(program: Command, ctx: Context): void {
  const disputes = program.command('disputes').description('disputes of deliveries');
  disputes
    .command('open <transactionId>')
    .description('dispute a delivery (consumer): the funds stay held')
    .addOption(new Option('--reason <reason>').choices(['output_quality', 'output_incomplete', 'schema_compliant_but_wrong', 'sla_violated', 'other']).makeOptionMandatory())
    .requiredOption('--description <text>', 'what is wrong (10+ characters)')
    .action(async (id: string, o: { reason: 'other'; description: string }, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.openDispute(id, { reason: o.reason, description: o.description })), disputeText));
  disputes
    .command('show <transactionId>')
    .description('the dispute of a transaction')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.transactionDispute(id)), disputeText));
  disputes
    .command('respond <disputeId>')
    .description('answer a dispute (provider)')
    .addOption(new Option('--outcome <outcome>').choices(['consumer_wins', 'partial_refund', 'provider_redo', 'contest']).makeOptionMandatory())
    .option('--refund-cents <n>', 'with partial_refund', cents('--refund-cents'))
    .option('--message <text>')
    .action(async (id: string, o: { outcome: 'contest'; refundCents?: number; message?: string }, cmd: Command) =>
      show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.respondDispute(id, { outcome: o.outcome, ...(o.refundCents ? { refundCents: o.refundCents } : {}), ...(o.message ? { message: o.message } : {}) })), disputeText));
  disputes
    .command('decide <disputeId>')
    .description('accept or refuse the provider\'s proposal (consumer); refusing escalates')
    .addOption(new Option('--accept').conflicts('refuse'))
    .option('--refuse')
    .action(async (id: string, o: { accept?: boolean; refuse?: boolean }, cmd: Command) => {
      if (!o.accept && !o.refuse) throw new CliError('Say --accept or --refuse.', EXIT.usage);
      show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.decideDispute(id, { accept: Boolean(o.accept) })), disputeText);
    });
  disputes
    .command('withdraw <disputeId>')
    .description('withdraw your dispute (consumer): the provider is paid')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.withdrawDispute(id)), disputeText));
}

function disputeText(d: { id: string; status: string; outcome: string | null; refundCents: number | null; proposal: unknown }): string {
  return record([['dispute', d.id], ['status', d.status], ['proposal', d.proposal], ['outcome', d.outcome], ['refund', usd(d.refundCents)]]);
}
