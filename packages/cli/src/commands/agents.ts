import { randomUUID } from 'node:crypto';
import { Option, type Command } from 'commander';
import { generateSigningKey } from '@agent-exchange/client';
import { saveProfile } from '@aex/agent-kit';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent, configPath } from '../profile-loading.js';
import { show } from '../show.js';
import { record, usd } from '../text-format.js';

interface CreateOptions {
  name: string;
  type: 'persistent' | 'ephemeral' | 'platform_managed';
  saveAs?: string;
}

interface SpawnOptions {
  name: string;
  budgetCents: number;
  hours?: number;
  saveAs?: string;
}

/** `aex agents …`: the account's agents; creating, deactivating and spawning them. */
export function registerAgentCommands(program: Command, ctx: Context): void {
  const agents = program.command('agents').description('agents of the account (creating and changing them is for the owner agent)');
  agents
    .command('show [agentId]')
    .description('an agent: full for the own account, the public profile otherwise (default: this agent)')
    .action(async (id: string | undefined, _o: unknown, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const a = ok(await client.getAgent(id ?? profile.agentId));
      show(ctx, cmd, a, (d) => record(Object.entries(d).filter(([k]) => k !== 'delegation')));
    });
  agents
    .command('create')
    .description('create an agent with its own signing key; --save-as keeps its credentials as a profile')
    .requiredOption('--name <name>', 'its name')
    .addOption(new Option('--type <type>', 'agent type').choices(['persistent', 'ephemeral', 'platform_managed']).default('persistent'))
    .option('--save-as <profile>', 'save its API key and signing key as this profile (else the API key is printed once)')
    .action((o: CreateOptions, cmd: Command) => createAgent(ctx, cmd, o));
  agents
    .command('deactivate <agentId>')
    .description('deactivate an agent: it finishes what it started and starts nothing new')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { client } = actingAgent(ctx, cmd);
      show(ctx, cmd, ok(await client.deactivateAgent(id)), (d) => `Agent ${d.id} is ${d.status}.\n`);
    });
  agents
    .command('spawn')
    .description('spawn a child agent with a budget moved from this agent\'s wallet, and its own signing key (it buys with it); --save-as keeps its credentials as a profile')
    .requiredOption('--name <name>', 'its name')
    .requiredOption('--budget-cents <n>', 'moved from this agent\'s wallet', cents('--budget-cents'))
    .option('--hours <n>', 'its lifetime in hours (default 24)', int('--hours'))
    .option('--save-as <profile>', 'save its API key and signing key as this profile (else both are printed once)')
    .action((o: SpawnOptions, cmd: Command) => spawnAgent(ctx, cmd, o));
}

async function createAgent(ctx: Context, cmd: Command, o: CreateOptions): Promise<void> {
  const { profile, client } = actingAgent(ctx, cmd);
  const pair = generateSigningKey();
  const created = ok(await client.createAgent({ name: o.name, agentType: o.type, signingKeyPublic: pair.publicKey }, { idempotencyKey: randomUUID() }));
  if (o.saveAs) saveProfile(configPath(ctx), o.saveAs, { url: profile.url, accountId: created.accountId, agentId: created.id, apiKey: created.apiKey, signingSecretKey: pair.secretKey }, false);
  show(ctx, cmd, { agentId: created.id, name: created.name, ...(o.saveAs ? { profile: o.saveAs } : { apiKey: created.apiKey, signingSecretKey: pair.secretKey }) }, (d) =>
    o.saveAs ? `Agent ${d.agentId} (${d.name}) saved as profile ${o.saveAs}.\n` : record([['agent', d.agentId], ['api key', created.apiKey], ['signing key', pair.secretKey]]) + 'Shown once: keep both secret.\n');
}

/**
 * A child buys with signed requests (D3.3) like any agent, so it is given a signing key of its own at
 * once: the child registers it with its own API key, as `signup` does. The credentials are saved (or
 * printed) before that, so a failed registration leaves them in hand: `aex keys register` retries.
 */
async function spawnAgent(ctx: Context, cmd: Command, o: SpawnOptions): Promise<void> {
  const { profile, client } = actingAgent(ctx, cmd);
  const child = ok(await client.spawnAgent(profile.agentId, { name: o.name, budgetCents: o.budgetCents, ...(o.hours ? { maxLifetimeHours: o.hours } : {}) }, { idempotencyKey: randomUUID() }));
  const keys = generateSigningKey();
  if (o.saveAs) saveProfile(configPath(ctx), o.saveAs, { url: profile.url, accountId: child.accountId, agentId: child.id, apiKey: child.apiKey, signingSecretKey: keys.secretKey }, false);
  const registered = await client.as({ apiKey: child.apiKey, signingSecretKey: keys.secretKey }).registerSigningKey(child.id);
  show(ctx, cmd, { agentId: child.id, expiresAt: child.expiresAt, signingKeyPublic: keys.publicKey, ...(o.saveAs ? { profile: o.saveAs } : { apiKey: child.apiKey, signingSecretKey: keys.secretKey }) }, (d) =>
    record([['agent', d.agentId], ['budget', `${usd(o.budgetCents)}, moved from this agent's wallet`], ['expires', d.expiresAt], ...(o.saveAs ? [['profile', o.saveAs]] : [['api key', child.apiKey], ['signing key', keys.secretKey]]) as Array<[string, string]>])
    + (o.saveAs ? '' : 'Shown once: keep both secret.\n'));
  ok(registered);
}
