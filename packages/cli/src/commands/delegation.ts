import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { cents } from '../number-arguments.js';
import { accountOf, actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { record } from '../text-format.js';

interface SetOptions {
  agent?: string;
  account?: boolean;
  maxTransactionCents?: number;
  maxDailySpendCents?: number;
  requireApprovalAboveCents?: number;
  autoApproveBelow?: number;
  allowedCategories?: string;
  blockedCategories?: string;
}

/** `aex delegation …`: the spending rules of an agent, or the account's defaults. */
export function registerDelegationCommands(program: Command, ctx: Context): void {
  const delegation = program.command('delegation').description('spending rules: the account\'s defaults and each agent\'s own');
  delegation
    .command('show [agentId]')
    .description('an agent\'s own rules (default: this agent)')
    .action(async (id: string | undefined, _o: unknown, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const a = ok(await client.getAgent(id ?? profile.agentId));
      show(ctx, cmd, 'delegation' in a ? a.delegation : {}, (d) => record(Object.entries(d ?? {}).length ? Object.entries(d ?? {}) : [['rules', 'none of its own (the account\'s defaults apply)']]));
    });
  delegation
    .command('set')
    .description('set rules for one agent (--agent) or the account\'s defaults (--account); owner agent only')
    .option('--agent <agentId>', 'the agent whose rules to set')
    .option('--account', 'set the account\'s defaults instead')
    .option('--max-transaction-cents <n>', 'largest single purchase', cents('--max-transaction-cents'))
    .option('--max-daily-spend-cents <n>', 'rolling 24 h spend', cents('--max-daily-spend-cents'))
    .option('--require-approval-above-cents <n>', 'the owner approves purchases above this (aex approvals)', cents('--require-approval-above-cents'))
    .option('--auto-approve-below <n>', 'only purchases below this go through without the owner\'s approval', cents('--auto-approve-below'))
    .option('--allowed-categories <list>', 'comma-separated categories it may buy in')
    .option('--blocked-categories <list>', 'comma-separated categories it may not buy in')
    .action(async (o: SetOptions, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const rules = rulesOf(o);
      const stored = o.account
        ? ok(await client.setAccountDelegation(await accountOf(profile, client), rules))
        : ok(await client.setAgentDelegation(o.agent ?? profile.agentId, rules));
      show(ctx, cmd, stored, (d) => record(Object.entries(d).length ? Object.entries(d) : [['rules', 'none']]));
    });
}

/** The rules the options give, by the names the exchange knows them by; the ones not given are left out. */
function rulesOf(o: SetOptions): Record<string, unknown> {
  const list = (s?: string) => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));
  return Object.fromEntries(Object.entries({
    maxTransactionCents: o.maxTransactionCents, maxDailySpendCents: o.maxDailySpendCents, requireHumanApprovalAboveCents: o.requireApprovalAboveCents, autoApproveBelow: o.autoApproveBelow,
    allowedCategories: list(o.allowedCategories), blockedCategories: list(o.blockedCategories),
  }).filter(([, v]) => v !== undefined));
}
