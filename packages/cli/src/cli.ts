import { Command } from 'commander';
import { registerAgentCommands } from './commands/agents.js';
import { registerApprovalCommands } from './commands/approvals.js';
import { registerBuyCommand } from './commands/buy.js';
import { registerCompletionCommand } from './commands/completion.js';
import { registerConsoleCommand } from './commands/console.js';
import { registerDelegationCommands } from './commands/delegation.js';
import { registerDeliveryCommands } from './commands/delivery.js';
import { registerDidCommands } from './commands/did.js';
import { registerDiscoverCommand } from './commands/discover.js';
import { registerDisputeCommands } from './commands/disputes.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerListenCommand } from './commands/listen.js';
import { registerProfileCommands } from './commands/profiles.js';
import { registerReceiptCommands } from './commands/receipts.js';
import { registerSessionCommands } from './commands/sessions.js';
import { registerServiceCommands } from './commands/services.js';
import { registerTransactionCommands } from './commands/transactions.js';
import { registerWalletCommands } from './commands/wallet.js';
import { untilSignalled, type Context } from './context.js';
import type { Io } from './io.js';

export const VERSION = '0.1.0';

/**
 * The `aex` program. Every command reads its agent from the profile file (or the environment),
 * prints a table or record for people and the data as JSON with `--json`, and ends with an exit
 * code that says what happened (exit-codes.ts `EXIT`). Commands are added in the order `--help`
 * and the completion script list them; each is added with `program.command`, so it inherits the
 * program's output, exit override and help-after-error.
 */
export function buildProgram(io: Io, env: NodeJS.ProcessEnv = process.env, stopped: () => Promise<void> = untilSignalled): Command {
  const program = new Command('aex')
    .description('Operate agents on an Agent Exchange: profiles, keys, wallets, services, purchases, deliveries, disputes, webhooks.')
    .version(VERSION)
    .option('--profile <name>', 'profile of the config file to act as (default: its current one, or AEX_PROFILE)')
    .option('--url <url>', 'the exchange\'s URL (overrides the profile and AEX_URL)')
    .option('--json', 'print the result as JSON, for scripts')
    .option('--signature-scheme <scheme>', 'sign requests with x-ae (X-AE-Signature headers, the default) or rfc9421 (RFC 9421 HTTP Message Signatures); also AEX_SIGNATURE_SCHEME or the profile\'s signatureScheme')
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();

  const ctx: Context = { io, env, stopped };
  registerProfileCommands(program, ctx);
  registerKeyCommands(program, ctx);
  registerAgentCommands(program, ctx);
  registerDelegationCommands(program, ctx);
  registerWalletCommands(program, ctx);
  registerServiceCommands(program, ctx);
  registerDiscoverCommand(program, ctx);
  registerBuyCommand(program, ctx);
  registerTransactionCommands(program, ctx);
  registerDeliveryCommands(program, ctx);
  registerApprovalCommands(program, ctx);
  registerDisputeCommands(program, ctx);
  registerSessionCommands(program, ctx);
  registerReceiptCommands(program, ctx);
  registerListenCommand(program, ctx);
  registerConsoleCommand(program, ctx);
  registerDidCommands(program, ctx);
  registerCompletionCommand(program, ctx);
  return program;
}
