import type { Command } from 'commander';
import { checkAgainstContract, describeProblems } from '@aex/agent-kit';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { readJson } from '../json-file.js';
import { int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';

/** `aex deliver` (the provider's output, checked against the contract first) and `aex verify` (the consumer accepts and pays). */
export function registerDeliveryCommands(program: Command, ctx: Context): void {
  program
    .command('deliver <transactionId>')
    .description('deliver the output of a transaction you provide (checked against the contract first)')
    .requiredOption('--output <file>', 'the output, a JSON file (- for standard input)')
    .option('--usage-units <n>', 'a metered purchase: the units used (0 to its maxUnits), signed with the delivery', int('--usage-units'))
    .action((id: string, o: { output: string; usageUnits?: number }, cmd: Command) => deliver(ctx, cmd, id, o.output, o.usageUnits));

  program
    .command('verify <transactionId>')
    .description('accept a delivery and pay the provider')
    .requiredOption('--score <n>', 'quality score 0–100 (feeds the provider\'s trust)', int('--score'))
    .option('--notes <text>')
    .action(async (id: string, o: { score: number; notes?: string }, cmd: Command) => {
      const tx = ok(await actingAgent(ctx, cmd).client.verify(id, { qualityScore: o.score, ...(o.notes ? { notes: o.notes } : {}) }));
      show(ctx, cmd, tx, (d) => `Transaction ${d.id} is ${d.status}.\n`);
    });
}

async function deliver(ctx: Context, cmd: Command, id: string, file: string, usageUnits: number | undefined): Promise<void> {
  const { client } = actingAgent(ctx, cmd);
  const output = readJson(file, 'output');
  const tx = ok(await client.getTransaction(id));
  const service = ok(await client.getService(tx.serviceId));
  // The contract the transaction was bought under is the one checked: a newer version may differ.
  if (service.version === tx.serviceVersion) {
    const check = checkAgainstContract(service.outputSchema, output, '/output');
    if (check.ok === false) throw new CliError(`Not sent (no delivery attempt used): the output does not pass the service's outputSchema:\n${describeProblems(check.problems)}`, EXIT.usage, { problems: check.problems });
  }
  const body = usageUnits !== undefined ? { output, usage: { units: usageUnits } } : { output };
  show(ctx, cmd, ok(await client.deliver(id, body)), (d) => `Transaction ${d.id} is ${d.status}${d.units !== null && usageUnits !== undefined ? ` (${d.units} units, ${d.agreedPriceCents} cents)` : ''}.\n`);
}
