import { randomUUID } from 'node:crypto';
import { Option, type Command } from 'commander';
import { ExchangeClient, generateSigningKey, publicKeyOf } from '@agent-exchange/client';
import { readProfiles, saveProfile } from '@aex/agent-kit';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { CliError, EXIT } from '../exit-codes.js';
import { globalOptions } from '../global-options.js';
import { askHidden } from '../hidden-prompt.js';
import { configPath, exchangeUrl } from '../profile-loading.js';
import { show } from '../show.js';
import { record, table } from '../text-format.js';

interface SignupOptions {
  email: string;
  displayName: string;
  type: 'individual' | 'organization';
  agentName?: string;
  saveAs?: string;
  showKey?: boolean;
}

interface LoginOptions {
  agentId: string;
  apiKey?: string;
  signingKey?: string;
  saveAs?: string;
}

/** `aex signup`, `aex login`, `aex profiles`: making, saving and listing profiles. */
export function registerProfileCommands(program: Command, ctx: Context): void {
  program
    .command('signup')
    .description('create an account with its owner agent and a signing key, saved as a profile')
    .requiredOption('--email <email>', 'the account\'s email')
    .requiredOption('--display-name <name>', 'the account\'s name')
    .addOption(new Option('--type <type>', 'account type').choices(['individual', 'organization']).default('individual'))
    .option('--agent-name <name>', 'the owner agent\'s name (default: the display name)')
    .option('--save-as <profile>', 'profile name (default: --profile, else "default")')
    .option('--show-key', 'also print the API key (it is saved in the profile either way)')
    .action((o: SignupOptions, cmd: Command) => signup(ctx, cmd, o));

  program
    .command('login')
    .description('save an existing agent\'s credentials as a profile, after checking them')
    .requiredOption('--agent-id <id>', 'the agent')
    .option('--api-key <key>', 'its API key (or AEX_API_KEY; asked for at a terminal)')
    .option('--signing-key <base64>', 'its Ed25519 secret key (or AEX_SIGNING_KEY)')
    .option('--save-as <profile>', 'profile name (default: --profile, else "default")')
    .action((o: LoginOptions, cmd: Command) => login(ctx, cmd, o));

  program
    .command('profiles')
    .description('list the profiles of the config file (no secrets shown)')
    .action((_o: unknown, cmd: Command) => {
      const file = readProfiles(configPath(ctx));
      const rows = Object.entries(file.profiles).map(([name, p]) => ({ name, current: name === file.current, url: p.url, agentId: p.agentId, signing: Boolean(p.signingSecretKey), keyPrefix: p.apiKey.slice(0, 12) }));
      show(ctx, cmd, rows, (r) => table(r, [['', (x) => (x.current ? '*' : '')], ['PROFILE', (x) => x.name], ['URL', (x) => x.url], ['AGENT', (x) => x.agentId], ['KEY', (x) => `${x.keyPrefix}…`], ['SIGNS', (x) => (x.signing ? 'yes' : 'no')]]));
    });
}

async function signup(ctx: Context, cmd: Command, o: SignupOptions): Promise<void> {
  const url = exchangeUrl(ctx, cmd);
  const anon = new ExchangeClient({ baseUrl: url });
  const account = ok(await anon.createAccount({ accountType: o.type, email: o.email, displayName: o.displayName, agent: { name: o.agentName ?? o.displayName } }, { idempotencyKey: randomUUID() }));
  const keys = generateSigningKey();
  const me = anon.as({ apiKey: account.apiKey, signingSecretKey: keys.secretKey });
  ok(await me.registerSigningKey(account.agent.id));
  const name = o.saveAs ?? globalOptions(cmd).profile ?? 'default';
  const path = configPath(ctx);
  saveProfile(path, name, { url, accountId: account.id, agentId: account.agent.id, apiKey: account.apiKey, signingSecretKey: keys.secretKey });
  show(ctx, cmd, { profile: name, path, accountId: account.id, agentId: account.agent.id, signingKeyPublic: keys.publicKey, ...(o.showKey ? { apiKey: account.apiKey } : {}) }, (d) =>
    record([['profile', d.profile], ['account', d.accountId], ['agent', d.agentId], ['signing key', d.signingKeyPublic], ...(o.showKey ? [['api key', account.apiKey] as [string, string]] : [])]) +
    `The API key and signing key are saved in ${d.path} (mode 600).\n`);
}

async function login(ctx: Context, cmd: Command, o: LoginOptions): Promise<void> {
  const url = exchangeUrl(ctx, cmd);
  const apiKey = o.apiKey ?? ctx.env.AEX_API_KEY ?? (await askHidden(ctx.io, 'API key: '));
  if (!apiKey) throw new CliError('Give the API key: --api-key, AEX_API_KEY, or type it at the prompt.', EXIT.usage);
  const signingSecretKey = o.signingKey ?? ctx.env.AEX_SIGNING_KEY;
  const agentView = ok(await new ExchangeClient({ baseUrl: url, apiKey }).getAgent(o.agentId));
  if (!('accountId' in agentView)) throw new CliError('That agent is not of the API key\'s account.', EXIT.refused);
  const note = signingKeyNote(agentView.signingKeyPublic, signingSecretKey);
  const name = o.saveAs ?? globalOptions(cmd).profile ?? 'default';
  const path = configPath(ctx);
  saveProfile(path, name, { url, accountId: agentView.accountId, agentId: o.agentId, apiKey, ...(signingSecretKey ? { signingSecretKey } : {}) });
  show(ctx, cmd, { profile: name, path, accountId: agentView.accountId, agentId: o.agentId, name: agentView.name }, (d) => record([['profile', d.profile], ['account', d.accountId], ['agent', `${d.agentId} (${d.name})`]]) + `Saved in ${d.path} (mode 600).\n${note}`);
}

/** What a login must still do before the agent can sign: nothing, or which key to give or register. */
function signingKeyNote(registered: string | null | undefined, secretKey: string | undefined): string {
  if (secretKey) {
    let pub: string;
    try {
      pub = publicKeyOf(secretKey);
    } catch {
      throw new CliError('The signing key is not a base64 Ed25519 secret key (32 bytes).', EXIT.usage);
    }
    return pub !== registered ? 'The signing key is not the one registered for this agent: run aex keys register before buying or delivering.\n' : '';
  }
  if (!registered) return 'No signing key yet: run aex keys generate, then aex keys register, before buying or delivering.\n';
  return 'The agent signs with a key this profile does not have: give it with --signing-key (or AEX_SIGNING_KEY), or replace it with aex keys generate, then aex keys register.\n';
}
