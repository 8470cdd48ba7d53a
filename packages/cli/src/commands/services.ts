import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { readJson } from '../json-file.js';
import { int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { table, usd } from '../text-format.js';

/** `aex services …`: registering the agent's services, listing, showing, pausing and resuming them. */
export function registerServiceCommands(program: Command, ctx: Context): void {
  const services = program.command('services').description('services: register yours, list, pause');
  services
    .command('register <file>')
    .description('register a service from a JSON file (name, description, version, category, schemas, pricing, sla…)')
    .action(async (file: string, _o: unknown, cmd: Command) => {
      const s = ok(await actingAgent(ctx, cmd).client.createService(readJson(file, 'service') as never, { idempotencyKey: randomUUID() }));
      show(ctx, cmd, s, (d) => `Registered ${d.id} (${d.name} ${d.version}, ${usd(d.pricing.basePriceCents)}).\n`);
    });
  services
    .command('list')
    .description('active services (with --mine, this agent\'s own, paused ones too)')
    .option('--mine', 'this agent\'s services')
    .option('--agent <agentId>', 'one provider\'s services')
    .option('--category <category>')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { mine?: boolean; agent?: string; category?: string; limit: number }, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const list = ok(await client.listServices({ limit: o.limit, ...(o.category ? { category: o.category } : {}), ...(o.mine || o.agent ? { agentId: o.agent ?? profile.agentId } : {}) }));
      show(ctx, cmd, list, (d) => table(d, [['ID', (s) => s.id], ['NAME', (s) => s.name], ['PRICE', (s) => usd(s.pricing.basePriceCents)], ['STATUS', (s) => s.status], ['TRUST', (s) => s.trustScore], ['PROVIDER', (s) => s.providerName], ['DELIVERS', (s) => s.liveness.state]]));
    });
  services
    .command('show <serviceId>')
    .description('a service\'s whole contract')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.getService(id)), (d) => `${JSON.stringify(d, null, 2)}\n`));
  for (const [name, status, what] of [['pause', 'paused', 'stop selling it (transactions in progress go on)'], ['resume', 'active', 'sell it again']] as const) {
    services
      .command(`${name} <serviceId>`)
      .description(what)
      .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.updateService(id, { status })), (d) => `${d.name} is ${d.status}.\n`));
  }
}
