import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ExchangeClient, generateSigningKey, publicKeyOf, type Outcome } from '@agent-exchange/client';
import type { TransactionView } from '@aex/contracts';
import {
  checkAgainstContract,
  clientOf,
  describeProblems,
  profilePath,
  readProfiles,
  requireAgentProfile,
  resolveProfile,
  saveProfile,
  updateProfile,
  UsageError,
  waitForStatus,
  type Profile,
} from '@aex/agent-kit';
import { completionScript } from './completion.js';
import { listen } from './listen.js';
import { CliError, EXIT, ok, processIo, record, table, usd, type Io } from './output.js';

export const VERSION = '0.1.0';

type Tx = Extract<Awaited<ReturnType<ExchangeClient['getTransaction']>>, { ok: true }>['data'];
type Global = { profile?: string; json?: boolean; url?: string };

/** A parser of whole-number options and arguments, whose refusal says what the number counts. */
const wholeNumber = (what: string) => (name: string) => (v: string) => {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new InvalidArgumentError(`${name} is ${what}.`);
  return Number(v);
};
const cents = wholeNumber('a whole number of cents');
const int = wholeNumber('a whole number');

/** Reads a JSON file (`-` for standard input) as an object, or says plainly why not. */
function readJson(path: string, what: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`, EXIT.usage);
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch (err) {
    throw new CliError(`The ${what} file ${path} is not a JSON object (${(err as Error).message}).`, EXIT.usage);
  }
}

/**
 * The `aex` program. Every command reads its agent from the profile file (or the environment),
 * prints a table or record for people and the data as JSON with `--json`, and ends with an exit
 * code that says what happened (output.ts `EXIT`).
 */
export function buildProgram(io: Io, env: NodeJS.ProcessEnv = process.env): Command {
  const program = new Command('aex')
    .description('Operate agents on an Agent Exchange: profiles, keys, wallets, services, purchases, deliveries, disputes, webhooks.')
    .version(VERSION)
    .option('--profile <name>', 'profile of the config file to act as (default: its current one, or AEX_PROFILE)')
    .option('--url <url>', 'the exchange\'s URL (overrides the profile and AEX_URL)')
    .option('--json', 'print the result as JSON, for scripts')
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();

  const globals = (cmd: Command): Global => cmd.optsWithGlobals() as Global;
  const path = () => profilePath(env);
  const resolved = (cmd: Command) => {
    const g = globals(cmd);
    const r = resolveProfile({ env, ...(g.profile ? { profile: g.profile } : {}) });
    return { name: r.name, profile: { ...r.profile, ...(g.url ? { url: g.url } : {}) } };
  };
  /** The profile's agent and a client acting as it. */
  const agent = (cmd: Command): { profile: Profile; client: ExchangeClient } => {
    const profile = requireAgentProfile(resolved(cmd).profile);
    return { profile, client: clientOf(profile) };
  };
  /** Prints `data` as JSON with --json, else what `human` makes of it. */
  const show = <T>(cmd: Command, data: T, human: (d: T) => string) => io.out(globals(cmd).json ? `${JSON.stringify(data, null, 2)}\n` : human(data));
  const urlOf = (cmd: Command, given?: string): string => {
    const url = given ?? globals(cmd).url ?? env.AEX_URL ?? resolved(cmd).profile.url;
    if (!url) throw new CliError('Which exchange? Give --url (e.g. http://127.0.0.1:8080) or set AEX_URL.', EXIT.usage);
    return url;
  };

  // --- profiles
  program
    .command('signup')
    .description('create an account with its owner agent and a signing key, saved as a profile')
    .requiredOption('--email <email>', 'the account\'s email')
    .requiredOption('--display-name <name>', 'the account\'s name')
    .addOption(new Option('--type <type>', 'account type').choices(['individual', 'organization']).default('individual'))
    .option('--agent-name <name>', 'the owner agent\'s name (default: the display name)')
    .option('--save-as <profile>', 'profile name (default: --profile, else "default")')
    .option('--show-key', 'also print the API key (it is saved in the profile either way)')
    .action(async (o: { email: string; displayName: string; type: 'individual' | 'organization'; agentName?: string; saveAs?: string; showKey?: boolean }, cmd: Command) => {
      const url = urlOf(cmd);
      const anon = new ExchangeClient({ baseUrl: url });
      const account = ok(await anon.createAccount({ accountType: o.type, email: o.email, displayName: o.displayName, agent: { name: o.agentName ?? o.displayName } }, { idempotencyKey: randomUUID() }));
      const keys = generateSigningKey();
      const me = anon.as({ apiKey: account.apiKey, signingSecretKey: keys.secretKey });
      ok(await me.registerSigningKey(account.agent.id));
      const name = o.saveAs ?? globals(cmd).profile ?? 'default';
      saveProfile(path(), name, { url, accountId: account.id, agentId: account.agent.id, apiKey: account.apiKey, signingSecretKey: keys.secretKey });
      show(cmd, { profile: name, path: path(), accountId: account.id, agentId: account.agent.id, signingKeyPublic: keys.publicKey, ...(o.showKey ? { apiKey: account.apiKey } : {}) }, (d) =>
        record([['profile', d.profile], ['account', d.accountId], ['agent', d.agentId], ['signing key', d.signingKeyPublic], ...(o.showKey ? [['api key', account.apiKey] as [string, string]] : [])]) +
        `The API key and signing key are saved in ${d.path} (mode 600).\n`);
    });

  program
    .command('login')
    .description('save an existing agent\'s credentials as a profile, after checking them')
    .requiredOption('--agent-id <id>', 'the agent')
    .option('--api-key <key>', 'its API key (or AEX_API_KEY; asked for at a terminal)')
    .option('--signing-key <base64>', 'its Ed25519 secret key (or AEX_SIGNING_KEY)')
    .option('--save-as <profile>', 'profile name (default: --profile, else "default")')
    .action(async (o: { agentId: string; apiKey?: string; signingKey?: string; saveAs?: string }, cmd: Command) => {
      const url = urlOf(cmd);
      const apiKey = o.apiKey ?? env.AEX_API_KEY ?? (await askHidden(io, 'API key: '));
      if (!apiKey) throw new CliError('Give the API key: --api-key, AEX_API_KEY, or type it at the prompt.', EXIT.usage);
      const signingSecretKey = o.signingKey ?? env.AEX_SIGNING_KEY;
      const agentView = ok(await new ExchangeClient({ baseUrl: url, apiKey }).getAgent(o.agentId));
      if (!('accountId' in agentView)) throw new CliError('That agent is not of the API key\'s account.', EXIT.refused);
      let note = '';
      if (signingSecretKey) {
        let pub: string;
        try {
          pub = publicKeyOf(signingSecretKey);
        } catch {
          throw new CliError('The signing key is not a base64 Ed25519 secret key (32 bytes).', EXIT.usage);
        }
        if (pub !== agentView.signingKeyPublic) note = 'The signing key is not the one registered for this agent: run aex keys register before buying or delivering.\n';
      } else if (!agentView.signingKeyPublic) note = 'No signing key yet: run aex keys generate, then aex keys register, before buying or delivering.\n';
      else note = 'The agent signs with a key this profile does not have: give it with --signing-key (or AEX_SIGNING_KEY), or replace it with aex keys generate, then aex keys register.\n';
      const name = o.saveAs ?? globals(cmd).profile ?? 'default';
      saveProfile(path(), name, { url, accountId: agentView.accountId, agentId: o.agentId, apiKey, ...(signingSecretKey ? { signingSecretKey } : {}) });
      show(cmd, { profile: name, path: path(), accountId: agentView.accountId, agentId: o.agentId, name: agentView.name }, (d) => record([['profile', d.profile], ['account', d.accountId], ['agent', `${d.agentId} (${d.name})`]]) + `Saved in ${d.path} (mode 600).\n${note}`);
    });

  program
    .command('profiles')
    .description('list the profiles of the config file (no secrets shown)')
    .action((_o: unknown, cmd: Command) => {
      const file = readProfiles(path());
      const rows = Object.entries(file.profiles).map(([name, p]) => ({ name, current: name === file.current, url: p.url, agentId: p.agentId, signing: Boolean(p.signingSecretKey), keyPrefix: p.apiKey.slice(0, 12) }));
      show(cmd, rows, (r) => table(r, [['', (x) => (x.current ? '*' : '')], ['PROFILE', (x) => x.name], ['URL', (x) => x.url], ['AGENT', (x) => x.agentId], ['KEY', (x) => `${x.keyPrefix}…`], ['SIGNS', (x) => (x.signing ? 'yes' : 'no')]]));
    });

  // --- keys
  const keys = program.command('keys').description('the agent\'s signing key and API key');
  keys
    .command('generate')
    .description('make a new Ed25519 signing key, kept in the profile until `aex keys register`')
    .action((_o: unknown, cmd: Command) => {
      const { name } = resolved(cmd);
      if (!name) throw new CliError('Keys are kept in a profile: make one first with aex signup or aex login.', EXIT.usage);
      const pair = generateSigningKey();
      updateProfile(path(), name, { pendingSigningSecretKey: pair.secretKey });
      show(cmd, { profile: name, publicKey: pair.publicKey }, (d) => `New signing key ${d.publicKey}\nRegister it with: aex keys register\n`);
    });
  keys
    .command('register')
    .description('register the generated signing key (replacing the registered one, which signs the change)')
    .action(async (_o: unknown, cmd: Command) => {
      const { name } = resolved(cmd);
      const { profile } = agent(cmd);
      const next = profile.pendingSigningSecretKey ?? profile.signingSecretKey;
      if (!next) throw new CliError('No signing key to register: run aex keys generate first.', EXIT.usage);
      const client = clientOf({ ...profile, signingSecretKey: next });
      const previous = profile.pendingSigningSecretKey && profile.signingSecretKey ? { previousSecretKey: profile.signingSecretKey } : {};
      const updated = ok(await client.registerSigningKey(profile.agentId, previous));
      if (name) updateProfile(path(), name, { signingSecretKey: next, pendingSigningSecretKey: undefined });
      show(cmd, { agentId: profile.agentId, signingKeyPublic: updated.signingKeyPublic }, (d) => `Registered signing key ${d.signingKeyPublic} for agent ${d.agentId}.\n`);
    });
  keys
    .command('rotate')
    .description('replace the API key (the old one stops working at once); the new one is saved in the profile')
    .action(async (_o: unknown, cmd: Command) => {
      const { name } = resolved(cmd);
      const { profile, client } = agent(cmd);
      const rotated = ok(await client.rotateKey(profile.agentId, { idempotencyKey: randomUUID() }));
      if (name) updateProfile(path(), name, { apiKey: rotated.apiKey });
      show(cmd, { agentId: profile.agentId, keyPrefix: rotated.keyPrefix, saved: Boolean(name) }, (d) => `New API key ${d.keyPrefix}… ${d.saved ? 'saved in the profile' : 'not saved (no profile): it was issued, and the old key is revoked'}.\n`);
    });

  // --- agents and delegation
  const agents = program.command('agents').description('agents of the account (creating and changing them is for the owner agent)');
  agents
    .command('show [agentId]')
    .description('an agent: full for the own account, the public profile otherwise (default: this agent)')
    .action(async (id: string | undefined, _o: unknown, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const a = ok(await client.getAgent(id ?? profile.agentId));
      show(cmd, a, (d) => record(Object.entries(d).filter(([k]) => k !== 'delegation')));
    });
  agents
    .command('create')
    .description('create an agent with its own signing key; --save-as keeps its credentials as a profile')
    .requiredOption('--name <name>', 'its name')
    .addOption(new Option('--type <type>', 'agent type').choices(['persistent', 'ephemeral', 'platform_managed']).default('persistent'))
    .option('--save-as <profile>', 'save its API key and signing key as this profile (else the API key is printed once)')
    .action(async (o: { name: string; type: 'persistent' | 'ephemeral' | 'platform_managed'; saveAs?: string }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const pair = generateSigningKey();
      const created = ok(await client.createAgent({ name: o.name, agentType: o.type, signingKeyPublic: pair.publicKey }, { idempotencyKey: randomUUID() }));
      if (o.saveAs) saveProfile(path(), o.saveAs, { url: profile.url, accountId: created.accountId, agentId: created.id, apiKey: created.apiKey, signingSecretKey: pair.secretKey }, false);
      show(cmd, { agentId: created.id, name: created.name, ...(o.saveAs ? { profile: o.saveAs } : { apiKey: created.apiKey, signingSecretKey: pair.secretKey }) }, (d) =>
        o.saveAs ? `Agent ${d.agentId} (${d.name}) saved as profile ${o.saveAs}.\n` : record([['agent', d.agentId], ['api key', created.apiKey], ['signing key', pair.secretKey]]) + 'Shown once: keep both secret.\n');
    });
  agents
    .command('deactivate <agentId>')
    .description('deactivate an agent: it finishes what it started and starts nothing new')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { client } = agent(cmd);
      show(cmd, ok(await client.deactivateAgent(id)), (d) => `Agent ${d.id} is ${d.status}.\n`);
    });
  agents
    .command('spawn')
    .description('spawn a child agent with a budget moved from this agent\'s wallet')
    .requiredOption('--name <name>', 'its name')
    .requiredOption('--budget-cents <n>', 'moved from this agent\'s wallet', cents('--budget-cents'))
    .option('--hours <n>', 'its lifetime in hours (default 24)', int('--hours'))
    .option('--save-as <profile>', 'save its credentials as this profile')
    .action(async (o: { name: string; budgetCents: number; hours?: number; saveAs?: string }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const child = ok(await client.spawnAgent(profile.agentId, { name: o.name, budgetCents: o.budgetCents, ...(o.hours ? { maxLifetimeHours: o.hours } : {}) }, { idempotencyKey: randomUUID() }));
      if (o.saveAs) saveProfile(path(), o.saveAs, { url: profile.url, accountId: child.accountId, agentId: child.id, apiKey: child.apiKey }, false);
      show(cmd, { agentId: child.id, expiresAt: child.expiresAt, ...(o.saveAs ? { profile: o.saveAs } : { apiKey: child.apiKey }) }, (d) => record(Object.entries(d)));
    });

  const delegation = program.command('delegation').description('spending rules: the account\'s defaults and each agent\'s own');
  delegation
    .command('show [agentId]')
    .description('an agent\'s own rules (default: this agent)')
    .action(async (id: string | undefined, _o: unknown, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const a = ok(await client.getAgent(id ?? profile.agentId));
      show(cmd, 'delegation' in a ? a.delegation : {}, (d) => record(Object.entries(d ?? {}).length ? Object.entries(d ?? {}) : [['rules', 'none of its own (the account\'s defaults apply)']]));
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
    .action(async (o: { agent?: string; account?: boolean; maxTransactionCents?: number; maxDailySpendCents?: number; requireApprovalAboveCents?: number; autoApproveBelow?: number; allowedCategories?: string; blockedCategories?: string }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const list = (s?: string) => (s === undefined ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));
      const rules = Object.fromEntries(Object.entries({
        maxTransactionCents: o.maxTransactionCents, maxDailySpendCents: o.maxDailySpendCents, requireHumanApprovalAboveCents: o.requireApprovalAboveCents, autoApproveBelow: o.autoApproveBelow,
        allowedCategories: list(o.allowedCategories), blockedCategories: list(o.blockedCategories),
      }).filter(([, v]) => v !== undefined));
      const stored = o.account
        ? ok(await client.setAccountDelegation(profile.accountId ?? ok(await client.getAgent(profile.agentId) as Outcome<{ accountId: string }>).accountId, rules))
        : ok(await client.setAgentDelegation(o.agent ?? profile.agentId, rules));
      show(cmd, stored, (d) => record(Object.entries(d).length ? Object.entries(d) : [['rules', 'none']]));
    });

  // --- wallet
  const wallet = program.command('wallet').description('the agent\'s wallet (the owner agent may name another agent of the account)');
  const walletOf = (cmd: Command, o: { agent?: string }) => o.agent ?? agent(cmd).profile.agentId;
  wallet
    .command('balance')
    .description('balance, held and available')
    .option('--agent <agentId>', 'another agent of the account')
    .action(async (o: { agent?: string }, cmd: Command) => {
      const w = ok(await agent(cmd).client.getWallet(walletOf(cmd, o)));
      show(cmd, w, (d) => record([['balance', usd(d.balanceCents)], ['held', usd(d.heldCents)], ['available', usd(d.availableCents)], ['earned', usd(d.lifetimeEarnedCents)], ['spent', usd(d.lifetimeSpentCents)]]));
    });
  wallet
    .command('fund <amountCents>')
    .description('add money (sandbox: at once; Stripe: open the checkout URL)')
    .option('--agent <agentId>', 'another agent of the account')
    .action(async (amount: string, o: { agent?: string }, cmd: Command) => {
      const f = ok(await agent(cmd).client.fund(walletOf(cmd, o), cents('amount')(amount), { idempotencyKey: randomUUID() }));
      show(cmd, f, (d) => (d.funded ? `Funded: the balance is now ${usd(d.newBalanceCents)}.\n` : `Pay at ${d.checkoutUrl} to fund the wallet.\n`));
    });
  wallet
    .command('withdraw <amountCents>')
    .description('pay money out of the available balance (Stripe: to the account\'s linked account)')
    .option('--agent <agentId>', 'another agent of the account')
    .option('--idempotency-key <key>', 'makes a retry of this command pay once (default: a new one each run)')
    .action(async (amount: string, o: { agent?: string; idempotencyKey?: string }, cmd: Command) => {
      const w = ok(await agent(cmd).client.withdraw(walletOf(cmd, o), cents('amount')(amount), { idempotencyKey: o.idempotencyKey ?? randomUUID() }));
      show(cmd, w, (d) => `Payout ${d.payoutId}: ${usd(d.amountCents)}, arriving by ${d.estimatedArrival}.\n`);
    });
  wallet
    .command('ledger')
    .description('the wallet\'s ledger entries, oldest first')
    .option('--agent <agentId>', 'another agent of the account')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { agent?: string; limit: number }, cmd: Command) => {
      const entries = ok(await agent(cmd).client.ledger(walletOf(cmd, o), { limit: o.limit }));
      show(cmd, entries, (d) => table(d, [['WHEN', (e) => e.createdAt], ['TYPE', (e) => e.txType], ['AMOUNT', (e) => usd(e.amountCents)], ['BALANCE', (e) => usd(e.balanceAfterCents)], ['TRANSACTION', (e) => e.transactionId]]));
    });

  // --- services and discovery
  const services = program.command('services').description('services: register yours, list, pause');
  services
    .command('register <file>')
    .description('register a service from a JSON file (name, description, version, category, schemas, pricing, sla…)')
    .action(async (file: string, _o: unknown, cmd: Command) => {
      const s = ok(await agent(cmd).client.createService(readJson(file, 'service') as never, { idempotencyKey: randomUUID() }));
      show(cmd, s, (d) => `Registered ${d.id} (${d.name} ${d.version}, ${usd(d.pricing.basePriceCents)}).\n`);
    });
  services
    .command('list')
    .description('active services (with --mine, this agent\'s own, paused ones too)')
    .option('--mine', 'this agent\'s services')
    .option('--agent <agentId>', 'one provider\'s services')
    .option('--category <category>')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { mine?: boolean; agent?: string; category?: string; limit: number }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const list = ok(await client.listServices({ limit: o.limit, ...(o.category ? { category: o.category } : {}), ...(o.mine || o.agent ? { agentId: o.agent ?? profile.agentId } : {}) }));
      show(cmd, list, (d) => table(d, [['ID', (s) => s.id], ['NAME', (s) => s.name], ['PRICE', (s) => usd(s.pricing.basePriceCents)], ['STATUS', (s) => s.status], ['TRUST', (s) => s.trustScore], ['PROVIDER', (s) => s.providerName]]));
    });
  services
    .command('show <serviceId>')
    .description('a service\'s whole contract')
    .action(async (id: string, _o: unknown, cmd: Command) => show(cmd, ok(await agent(cmd).client.getService(id)), (d) => `${JSON.stringify(d, null, 2)}\n`));
  for (const [name, status, what] of [['pause', 'paused', 'stop selling it (transactions in progress go on)'], ['resume', 'active', 'sell it again']] as const) {
    services
      .command(`${name} <serviceId>`)
      .description(what)
      .action(async (id: string, _o: unknown, cmd: Command) => show(cmd, ok(await agent(cmd).client.updateService(id, { status })), (d) => `${d.name} is ${d.status}.\n`));
  }

  program
    .command('discover <need>')
    .description('find services by need, in plain words')
    .option('--max-budget-cents <n>', 'only services that fit', cents('--max-budget-cents'))
    .option('--min-trust <n>', 'only providers trusted at least this much (0–100)', int('--min-trust'))
    .option('--category <category>')
    .option('--input <file>', 'an input you have (JSON): services that accept it rank first')
    .option('--limit <n>', 'how many', int('--limit'), 10)
    .action(async (need: string, o: { maxBudgetCents?: number; minTrust?: number; category?: string; input?: string; limit: number }, cmd: Command) => {
      const found = ok(await agent(cmd).client.discover({
        need, limit: o.limit,
        ...(o.maxBudgetCents !== undefined ? { maxBudgetCents: o.maxBudgetCents } : {}), ...(o.minTrust !== undefined ? { minTrustScore: o.minTrust } : {}),
        ...(o.category ? { category: o.category } : {}), ...(o.input ? { inputAvailable: readJson(o.input, 'input') } : {}),
      }));
      show(cmd, found, (d) => table(d.matches, [['SERVICE', (m) => m.serviceId], ['NAME', (m) => m.serviceName], ['PROVIDER', (m) => m.agentName], ['PRICE', (m) => usd(m.priceCents)], ['LATENCY', (m) => `${m.estimatedLatencyMs} ms`], ['TRUST', (m) => m.trustScore], ['FIT', (m) => m.compatibilityScore.toFixed(2)]]) + d.warnings.map((w) => `note: ${w.message}\n`).join(''));
    });

  // --- purchases
  program
    .command('buy <serviceId>')
    .description('buy a service: the input is checked against its contract, the price held; --wait follows it to the delivery')
    .requiredOption('--input <file>', 'the input, a JSON file (- for standard input)')
    .option('--units <n>', 'for per_unit and tiered pricing', int('--units'))
    .option('--max-price-cents <n>', 'your opening offer: opens a negotiation when below the price', cents('--max-price-cents'))
    .option('--idempotency-key <key>', 'makes a retry of this command safe (default: a new one each run)')
    .option('--wait', 'follow the transaction until it is delivered (a live status line at a terminal)')
    .option('--timeout <seconds>', 'how long --wait waits', int('--timeout'), 600)
    .action(async (serviceId: string, o: { input: string; units?: number; maxPriceCents?: number; idempotencyKey?: string; wait?: boolean; timeout: number }, cmd: Command) => {
      const { client } = agent(cmd);
      const input = readJson(o.input, 'input');
      const service = ok(await client.getService(serviceId));
      const check = checkAgainstContract(service.inputSchema, input, '/input');
      if (check.ok === false) throw new CliError(`Not sent: the input does not pass the service's inputSchema:\n${describeProblems(check.problems)}`, EXIT.usage, { problems: check.problems });
      const tx = ok(await client.createTransaction(
        { serviceId, input, ...(o.units ? { units: o.units } : {}), ...(o.maxPriceCents ? { maxPriceCents: o.maxPriceCents } : {}) },
        { idempotencyKey: o.idempotencyKey ?? randomUUID() },
      ));
      if (!o.wait) return show(cmd, tx, (d) => `Transaction ${d.id}: ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)}` : ''}.\n${awaitingNote(d)}`);
      if (tx.status === 'awaiting_approval' && !globals(cmd).json) io.err(awaitingNote(tx));
      const final = await follow(io, client, tx, ['delivered'], o.timeout, Boolean(globals(cmd).json));
      show(cmd, final, (d) => (d.status === 'delivered' ? `Delivered: ${JSON.stringify(d.output)}\nAccept it with: aex verify ${d.id} --score 0-100 (or: aex disputes open ${d.id} …)\n` : `Transaction ${d.id} is ${d.status}${d.statusReason ? ` (${d.statusReason})` : ''}.\n`));
      if (final.status !== 'delivered') throw new CliError(`The transaction did not reach delivered: it is ${final.status}.`, EXIT.notReached, { status: final.status });
    });

  const transactions = program.command('transactions').alias('tx').description('transactions, as consumer or provider');
  transactions
    .command('list')
    .option('--role <role>', 'consumer or provider')
    .option('--status <status>')
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .description('the agent\'s transactions, newest first')
    .action(async (o: { role?: 'consumer' | 'provider'; status?: string; limit: number }, cmd: Command) => {
      const list = ok(await agent(cmd).client.listTransactions({ limit: o.limit, ...(o.role ? { role: o.role } : {}), ...(o.status ? { status: o.status } : {}) } as Parameters<ExchangeClient['listTransactions']>[0]));
      show(cmd, list, (d) => table(d, [['ID', (t) => t.id], ['STATUS', (t) => t.status], ['PRICE', (t) => usd(t.agreedPriceCents)], ['SERVICE', (t) => t.serviceId], ['UPDATED', (t) => t.updatedAt]]));
    });
  transactions
    .command('show <transactionId>')
    .description('one transaction, with its negotiation')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { client } = agent(cmd);
      const tx = ok(await client.getTransaction(id));
      show(cmd, tx, (d) => record([['id', d.id], ['status', d.status], ['reason', d.statusReason], ['price', usd(d.agreedPriceCents)], ['fee', usd(d.platformFeeCents)], ['consumer', d.consumerAgentId], ['provider', d.providerAgentId], ['service', `${d.serviceId} ${d.serviceVersion}`], ['input', d.input], ['output', d.output], ['expires', d.expiresAt]]));
    });
  transactions
    .command('cancel <transactionId>')
    .description('cancel before delivery; held funds return')
    .action(async (id: string, _o: unknown, cmd: Command) => show(cmd, ok(await agent(cmd).client.cancel(id)), (d) => `Transaction ${d.id} is ${d.status}.\n`));
  transactions
    .command('negotiate <transactionId>')
    .description('answer a negotiation on your turn')
    .addOption(new Option('--counter <cents>', 'counter-offer this price').argParser(cents('--counter')))
    .addOption(new Option('--accept', 'accept the latest offer').conflicts(['counter', 'reject', 'withdraw']))
    .addOption(new Option('--reject', 'reject it: the negotiation ends').conflicts(['counter', 'withdraw']))
    .addOption(new Option('--withdraw', 'withdraw: the negotiation ends').conflicts(['counter']))
    .option('--message <text>')
    .action(async (id: string, o: { counter?: number; accept?: boolean; reject?: boolean; withdraw?: boolean; message?: string }, cmd: Command) => {
      const type = o.counter !== undefined ? 'counter_offer' : o.accept ? 'accept' : o.reject ? 'reject' : o.withdraw ? 'withdraw' : undefined;
      if (!type) throw new CliError('Say what to do: --counter CENTS, --accept, --reject or --withdraw.', EXIT.usage);
      const tx = ok(await agent(cmd).client.negotiate(id, { type, terms: o.counter !== undefined ? { priceCents: o.counter } : {}, ...(o.message ? { message: o.message } : {}) }));
      show(cmd, tx, (d) => `Transaction ${d.id} is ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)}` : ''}.\n`);
    });

  program
    .command('deliver <transactionId>')
    .description('deliver the output of a transaction you provide (checked against the contract first)')
    .requiredOption('--output <file>', 'the output, a JSON file (- for standard input)')
    .action(async (id: string, o: { output: string }, cmd: Command) => {
      const { client } = agent(cmd);
      const output = readJson(o.output, 'output');
      const tx = ok(await client.getTransaction(id));
      const service = ok(await client.getService(tx.serviceId));
      if (service.version === tx.serviceVersion) {
        const check = checkAgainstContract(service.outputSchema, output, '/output');
        if (check.ok === false) throw new CliError(`Not sent (no delivery attempt used): the output does not pass the service's outputSchema:\n${describeProblems(check.problems)}`, EXIT.usage, { problems: check.problems });
      }
      show(cmd, ok(await client.deliver(id, output)), (d) => `Transaction ${d.id} is ${d.status}.\n`);
    });

  program
    .command('verify <transactionId>')
    .description('accept a delivery and pay the provider')
    .requiredOption('--score <n>', 'quality score 0–100 (feeds the provider\'s trust)', int('--score'))
    .option('--notes <text>')
    .action(async (id: string, o: { score: number; notes?: string }, cmd: Command) => {
      const tx = ok(await agent(cmd).client.verify(id, { qualityScore: o.score, ...(o.notes ? { notes: o.notes } : {}) }));
      show(cmd, tx, (d) => `Transaction ${d.id} is ${d.status}.\n`);
    });

  const approvals = program.command('approvals').description('purchases awaiting the account owner\'s approval (the owner agent decides)');
  approvals
    .command('list')
    .description('the account\'s purchases awaiting approval, newest first')
    .addOption(new Option('--state <state>', 'pending (waiting), decided (approved or denied) or all').choices(['pending', 'decided', 'all']).default('pending'))
    .option('--limit <n>', 'how many', int('--limit'), 20)
    .action(async (o: { state: 'pending' | 'decided' | 'all'; limit: number }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const accountId = profile.accountId ?? ok(await client.getAgent(profile.agentId) as Outcome<{ accountId: string }>).accountId;
      const list = ok(await client.listApprovals(accountId, { state: o.state, limit: o.limit }));
      show(cmd, list, (d) => (d.length === 0 ? `No purchases ${o.state === 'pending' ? 'await approval' : 'needed an approval'}.\n` : table(d, [
        ['ID', (t) => t.id], ['STATUS', (t) => t.status], ['PRICE', (t) => usd(t.agreedPriceCents)], ['BUYER', (t) => t.consumerAgentId], ['SERVICE', (t) => t.serviceId],
        ['WHY', (t) => approvalReason(t.approval)], ['DECIDE BY', (t) => (t.status === 'awaiting_approval' ? t.approval?.expiresAt ?? '-' : t.approval?.decision ?? t.statusReason ?? '-')],
      ])));
    });
  approvals
    .command('approve <transactionId>')
    .description('approve a purchase: its price is held and the provider may start')
    .action(async (id: string, _o: unknown, cmd: Command) =>
      show(cmd, ok(await agent(cmd).client.approve(id)), (d) => `Approved: transaction ${d.id} is ${d.status}${d.agreedPriceCents !== null ? `, ${usd(d.agreedPriceCents)} held` : ''}.\n`));
  approvals
    .command('deny <transactionId>')
    .description('deny a purchase: it is cancelled and nothing is paid')
    .option('--reason <text>', 'why (kept with the approval, shown to the buyer\'s account)')
    .action(async (id: string, o: { reason?: string }, cmd: Command) =>
      show(cmd, ok(await agent(cmd).client.deny(id, o.reason ? { reason: o.reason } : {})), (d) => `Denied: transaction ${d.id} is ${d.status} (${d.statusReason}).\n`));

  const disputes = program.command('disputes').description('disputes of deliveries');
  disputes
    .command('open <transactionId>')
    .description('dispute a delivery (consumer): the funds stay held')
    .addOption(new Option('--reason <reason>').choices(['output_quality', 'output_incomplete', 'schema_compliant_but_wrong', 'sla_violated', 'other']).makeOptionMandatory())
    .requiredOption('--description <text>', 'what is wrong (10+ characters)')
    .action(async (id: string, o: { reason: 'other'; description: string }, cmd: Command) => show(cmd, ok(await agent(cmd).client.openDispute(id, { reason: o.reason, description: o.description })), disputeText));
  disputes
    .command('show <transactionId>')
    .description('the dispute of a transaction')
    .action(async (id: string, _o: unknown, cmd: Command) => show(cmd, ok(await agent(cmd).client.transactionDispute(id)), disputeText));
  disputes
    .command('respond <disputeId>')
    .description('answer a dispute (provider)')
    .addOption(new Option('--outcome <outcome>').choices(['consumer_wins', 'partial_refund', 'provider_redo', 'contest']).makeOptionMandatory())
    .option('--refund-cents <n>', 'with partial_refund', cents('--refund-cents'))
    .option('--message <text>')
    .action(async (id: string, o: { outcome: 'contest'; refundCents?: number; message?: string }, cmd: Command) =>
      show(cmd, ok(await agent(cmd).client.respondDispute(id, { outcome: o.outcome, ...(o.refundCents ? { refundCents: o.refundCents } : {}), ...(o.message ? { message: o.message } : {}) })), disputeText));
  disputes
    .command('decide <disputeId>')
    .description('accept or refuse the provider\'s proposal (consumer); refusing escalates')
    .addOption(new Option('--accept').conflicts('refuse'))
    .option('--refuse')
    .action(async (id: string, o: { accept?: boolean; refuse?: boolean }, cmd: Command) => {
      if (!o.accept && !o.refuse) throw new CliError('Say --accept or --refuse.', EXIT.usage);
      show(cmd, ok(await agent(cmd).client.decideDispute(id, { accept: Boolean(o.accept) })), disputeText);
    });
  disputes
    .command('withdraw <disputeId>')
    .description('withdraw your dispute (consumer): the provider is paid')
    .action(async (id: string, _o: unknown, cmd: Command) => show(cmd, ok(await agent(cmd).client.withdrawDispute(id)), disputeText));

  // --- webhooks, DIDs, completion
  program
    .command('listen')
    .description('receive the agent\'s webhooks here: verified, printed, optionally forwarded (like stripe listen)')
    .option('--port <n>', 'port to listen on (default: any free one)', int('--port'), 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--public-url <url>', 'the URL the exchange should call, when it is not http://HOST:PORT/webhooks (a tunnel)')
    .option('--forward-to <url>', 'send every verified event on to this URL')
    .option('--agent <agentId>', 'another agent of the account (owner agent)')
    .option('--keep', 'leave the webhook URL pointing here on exit')
    .action(async (o: { port: number; host: string; publicUrl?: string; forwardTo?: string; agent?: string; keep?: boolean }, cmd: Command) => {
      const { profile, client } = agent(cmd);
      const until = new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await listen(client, io, { agentId: o.agent ?? profile.agentId, host: o.host, port: o.port, keep: Boolean(o.keep), json: Boolean(globals(cmd).json), until, ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}), ...(o.forwardTo ? { forwardTo: o.forwardTo } : {}) });
    });

  const did = program.command('did').description('did:web identities');
  did
    .command('resolve <agentId>')
    .description('the DID document a did:web resolver gets for an agent')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const doc = ok(await new ExchangeClient({ baseUrl: urlOf(cmd) }).resolveDid(id));
      io.out(`${JSON.stringify(doc, null, 2)}\n`);
    });

  program
    .command('completion')
    .description('print a shell completion script: source <(aex completion bash)')
    .addArgument(new Command().createArgument('<shell>', 'bash or zsh').choices(['bash', 'zsh']))
    .action((shell: 'bash' | 'zsh') => io.out(completionScript(program, shell)));

  return program;
}

/** D10.3: why a purchase needs an approval, as the buyer's account reads it. */
function approvalReason(a: TransactionView['approval']): string {
  if (!a?.rule) return '-';
  return a.rule === 'requireHumanApprovalAboveCents' ? `above ${usd(a.limit)}` : `not below ${usd(a.limit)}`;
}

/** What the buyer is told of a purchase awaiting its owner's approval (D10.3); nothing otherwise. */
function awaitingNote(t: TransactionView): string {
  if (t.status !== 'awaiting_approval') return '';
  return `It awaits your account owner's approval (${approvalReason(t.approval)}), until ${t.approval?.expiresAt ?? 'it expires'}.\n`
    + `The owner approves with: aex approvals approve ${t.id}   (or denies: aex approvals deny ${t.id})\n`;
}

function disputeText(d: { id: string; status: string; outcome: string | null; refundCents: number | null; proposal: unknown }): string {
  return record([['dispute', d.id], ['status', d.status], ['proposal', d.proposal], ['outcome', d.outcome], ['refund', usd(d.refundCents)]]);
}

/**
 * Follows a transaction until one of `until` or an end: a status line redrawn in place at a
 * terminal (with the time spent), one line per status otherwise (and nothing but the result with --json).
 */
async function follow(io: Io, client: ExchangeClient, tx: Tx, until: readonly string[], timeoutSeconds: number, json: boolean): Promise<Tx> {
  const live = io.isTTY && !json;
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  let status = tx.status;
  let frame = 0;
  const started = Date.now();
  const draw = () => io.out(`\r\x1b[2K${frames[frame++ % frames.length]} ${tx.id.slice(0, 8)}  ${status}  ${((Date.now() - started) / 1000).toFixed(1)}s`);
  const ticker = live ? setInterval(draw, 120) : undefined;
  try {
    const outcome = await waitForStatus(client, tx.id, until, {
      timeoutMs: timeoutSeconds * 1000,
      intervalMs: 250,
      onStatus: (t) => {
        status = t.status;
        if (live) draw();
        else if (!json) io.out(`${new Date().toISOString()}  ${t.id}  ${t.status}${t.statusReason ? ` (${t.statusReason})` : ''}\n`);
      },
    });
    if ('error' in outcome) throw ok({ ok: false, status: outcome.error.status, error: outcome.error, headers: null });
    if (!outcome.reached && outcome.timedOut) throw new CliError(`Still ${outcome.transaction.status} after ${timeoutSeconds} s; follow it with: aex tx show ${tx.id}`, EXIT.notReached, { status: outcome.transaction.status });
    return outcome.transaction;
  } finally {
    if (ticker) clearInterval(ticker);
    if (live) io.out(`\r\x1b[2K✓ ${tx.id.slice(0, 8)}  ${status}  ${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  }
}

/** Reads a secret at a terminal without echoing it; null when there is no terminal. */
async function askHidden(io: Io, prompt: string): Promise<string | null> {
  if (!process.stdin.isTTY) return null;
  io.err(prompt);
  process.stdin.setRawMode(true);
  process.stdin.resume();
  let value = '';
  try {
    for await (const chunk of process.stdin) {
      for (const ch of (chunk as Buffer).toString('utf8')) {
        if (ch === '\r' || ch === '\n') return value;
        if (ch === '\u0003') throw new CliError('Cancelled.', EXIT.usage);
        if (ch === '\u007f') value = value.slice(0, -1);
        else value += ch;
      }
    }
    return value;
  } finally {
    process.stdin.setRawMode(false);
    process.stdin.pause();
    io.err('\n');
  }
}

/**
 * Runs `aex` with these arguments and answers its exit code: 0 done, 1 the exchange refused,
 * 2 a usage mistake, 3 the exchange unreachable, 4 `--wait` did not reach its status.
 */
export async function run(argv: string[], io: Io = processIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const program = buildProgram(io, env);
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const e = err instanceof CliError ? err : err instanceof UsageError ? new CliError(err.message, EXIT.usage) : new CliError(`unexpected error: ${(err as Error).stack ?? String(err)}`, 1);
    io.err(json ? `${JSON.stringify({ error: { message: e.message, exitCode: e.exitCode, ...e.details } })}\n` : `aex: ${e.message}\n`);
    return e.exitCode;
  }
}
