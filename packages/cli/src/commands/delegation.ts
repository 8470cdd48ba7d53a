import type { Command } from 'commander';
import type { DelegationInForceView, DelegationPatchView } from '@aex/contracts';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { cents } from '../number-arguments.js';
import { accountOf, actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { record, table } from '../text-format.js';

interface SetOptions {
  agent?: string;
  account?: boolean;
  maxTransactionCents?: number;
  maxDailySpendCents?: number;
  requireApprovalAboveCents?: number;
  autoApproveBelow?: number;
  allowedCategories?: string;
  blockedCategories?: string;
  unset?: string[];
  replace?: boolean;
}

/** Each rule by its option's name (what `--unset` takes) and by the name the exchange knows it by. */
const RULES: Array<[option: string, field: string]> = [
  ['max-transaction-cents', 'maxTransactionCents'],
  ['max-daily-spend-cents', 'maxDailySpendCents'],
  ['allowed-categories', 'allowedCategories'],
  ['blocked-categories', 'blockedCategories'],
  ['require-approval-above-cents', 'requireHumanApprovalAboveCents'],
  ['auto-approve-below', 'autoApproveBelow'],
];

/** `aex delegation …`: the spending rules of an agent, or the account's defaults. */
export function registerDelegationCommands(program: Command, ctx: Context): void {
  const delegation = program.command('delegation').description('spending rules: the account\'s defaults and each agent\'s own');
  delegation
    .command('show [agentId]')
    .description('an agent\'s own rules and the rules in force, which the exchange checks its purchases against (the agent as an argument or --agent, default: this agent), or the account\'s defaults (--account)')
    .option('--agent <agentId>', 'the agent whose rules to show')
    .option('--account', 'show the account\'s defaults instead')
    .action(async (id: string | undefined, o: { agent?: string; account?: boolean }, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      if (o.account) {
        const account = ok(await client.getAccount(await accountOf(profile, client)));
        const defaults = 'defaultDelegation' in account ? account.defaultDelegation : {};
        return show(ctx, cmd, defaults ?? {}, (d) => record(Object.entries(d).length ? Object.entries(d) : [['rules', 'none: the account has no default rules']]));
      }
      // D10.1, D6.8: the exchange says what is in force; a child's rules are not its own over the defaults.
      show(ctx, cmd, ok(await client.getAgentDelegation(o.agent ?? id ?? profile.agentId)), describeInForce);
    });
  delegation
    .command('set')
    .description('change rules of one agent (--agent, default: this agent) or the account\'s defaults (--account); owner agent only. Only the rules given change: the others are kept')
    .option('--agent <agentId>', 'the agent whose rules to change')
    .option('--account', 'change the account\'s defaults instead')
    .option('--max-transaction-cents <n>', 'largest single purchase', cents('--max-transaction-cents'))
    .option('--max-daily-spend-cents <n>', 'rolling 24 h spend', cents('--max-daily-spend-cents'))
    .option('--require-approval-above-cents <n>', 'the owner approves purchases above this (aex approvals)', cents('--require-approval-above-cents'))
    .option('--auto-approve-below <n>', 'only purchases below this go through without the owner\'s approval', cents('--auto-approve-below'))
    .option('--allowed-categories <list>', 'comma-separated categories it may buy in')
    .option('--blocked-categories <list>', 'comma-separated categories it may not buy in')
    .option('--unset <rule>', 'remove one rule, named as its option is (repeatable)', (v: string, all: string[] | undefined) => [...(all ?? []), v])
    .option('--replace', 'replace all the rules with exactly those given: every rule not given is removed')
    .addHelpText('after', `
Rules --unset takes: ${RULES.map(([o]) => o).join(', ')}.

Examples:
  aex delegation set --max-transaction-cents 250             only this rule changes; the others are kept
  aex delegation set --unset require-approval-above-cents    removes that rule; the others are kept
  aex delegation set --replace --max-daily-spend-cents 900   exactly this rule; every other one is removed`)
    .action(async (o: SetOptions, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const rules = rulesOf(o);
      // D23.3: without --replace, a PATCH changes only the rules given (and removes those unset).
      const patch = o.replace ? undefined : patchOf(rules, o.unset ?? []);
      if (o.replace && o.unset) throw new CliError('--unset and --replace do not go together: --replace already removes every rule not given.', EXIT.usage);
      const accountId = o.account ? await accountOf(profile, client) : undefined;
      const agentId = o.agent ?? profile.agentId;
      if (patch) {
        const changed = accountId ? ok(await client.patchAccountDelegation(accountId, patch)) : ok(await client.patchAgentDelegation(agentId, patch));
        show(ctx, cmd, changed, (d) => describeChange(d, patch));
        return;
      }
      const stored = accountId ? ok(await client.setAccountDelegation(accountId, rules)) : ok(await client.setAgentDelegation(agentId, rules));
      show(ctx, cmd, stored, (d) => `Replaced: these are all the rules now; any other rule was removed.\n${record(Object.entries(d).length ? Object.entries(d) : [['rules', 'none']])}`);
    });
}

/** The PATCH of the rules given and the rules unset (`null`); at least one. */
function patchOf(rules: Record<string, unknown>, unset: string[]): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...rules };
  for (const name of unset) {
    const field = fieldOf(name);
    if (field in rules) throw new CliError(`--unset ${name} and a value for it do not go together.`, EXIT.usage);
    patch[field] = null;
  }
  if (Object.keys(patch).length === 0) throw new CliError('Give at least one rule to change (e.g. --max-transaction-cents 500) or --unset RULE; see aex delegation set --help.', EXIT.usage);
  return patch;
}

/** The rules the options give, by the names the exchange knows them by; the ones not given are left out. */
function rulesOf(o: SetOptions): Record<string, unknown> {
  const list = (s?: string) => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));
  return Object.fromEntries(Object.entries({
    maxTransactionCents: o.maxTransactionCents, maxDailySpendCents: o.maxDailySpendCents, requireHumanApprovalAboveCents: o.requireApprovalAboveCents, autoApproveBelow: o.autoApproveBelow,
    allowedCategories: list(o.allowedCategories), blockedCategories: list(o.blockedCategories),
  }).filter(([, v]) => v !== undefined));
}

/** The exchange's name of a rule given to --unset by its option's name (or by the exchange's own). */
function fieldOf(name: string): string {
  const rule = RULES.find(([option, field]) => name === option || name === `--${option}` || name === field);
  if (!rule) throw new CliError(`--unset takes one of: ${RULES.map(([o]) => o).join(', ')} (not "${name}").`, EXIT.usage);
  return rule[1];
}

/** A rule's value as printed: categories joined by commas, `-` for none. */
const text = (v: unknown) => (v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v));

/**
 * Every rule now, each marked as changed, new, kept or removed — and, where the exchange stored
 * another value than the one asked, both: a child's own rules are capped at its parent's (D6.8).
 */
function describeChange({ rules, changes }: DelegationPatchView, asked: Record<string, unknown>): string {
  const same = (a: unknown, b: unknown) => (Array.isArray(a) && Array.isArray(b) ? text([...a].sort()) === text([...b].sort()) : text(a) === text(b));
  const capped = (field: string, now: unknown) => (asked[field] === undefined || asked[field] === null || same(asked[field], now) ? '' : `; ${text(asked[field])} asked, capped at the rules a child starts from`);
  const lines: Array<[string, string]> = [];
  for (const [, field] of RULES) {
    const change = changes.find((c) => c.field === field);
    const now = (rules as Record<string, unknown>)[field];
    if (change && change.to === null) lines.push([field, `removed (was ${text(change.from)})`]);
    else if (change) lines.push([field, `${text(change.to)} (${change.from === null ? 'new' : `was ${text(change.from)}`}${capped(field, change.to)})`]);
    else if (now !== undefined) lines.push([field, `${text(now)} (kept${capped(field, now)})`]);
  }
  const head = changes.length === 0 ? 'Nothing changed: the rules already were so.' : `Changed ${changes.length === 1 ? '1 rule' : `${changes.length} rules`}; the others are kept.`;
  return `${head}\n${lines.length ? record(lines) : 'No rules now.\n'}`;
}

/** Each rule set, its own value beside the one in force, and what the rules in force start from. */
function describeInForce({ own, inForce, base }: DelegationInForceView): string {
  const set = RULES.map(([, field]) => field as keyof typeof own).filter((f) => own[f] !== undefined || inForce[f] !== undefined);
  const from = base === 'parent'
    ? 'its parent\'s rules in force, tightened by its own (an own value looser than the parent\'s does not apply)'
    : 'the account\'s defaults, each rule of its own replacing the default';
  if (set.length === 0) return `No rules: nothing limits its purchases (no rule of its own, none from ${base === 'parent' ? 'its parent' : 'the account\'s defaults'}).\n`;
  return `${table(set, [['RULE', (f) => f], ['OWN', (f) => text(own[f])], ['IN FORCE', (f) => text(inForce[f])]])}In force: what the exchange checks its purchases against — ${from}.\n`;
}
