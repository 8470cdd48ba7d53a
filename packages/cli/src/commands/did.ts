import type { Command } from 'commander';
import { ExchangeClient } from '@agent-exchange/client';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { exchangeUrl } from '../profile-loading.js';

/** `aex did resolve AGENT`: what a did:web resolver gets, asked without credentials. */
export function registerDidCommands(program: Command, ctx: Context): void {
  const did = program.command('did').description('did:web identities');
  did
    .command('resolve <agentId>')
    .description('the DID document a did:web resolver gets for an agent')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const doc = ok(await new ExchangeClient({ baseUrl: exchangeUrl(ctx, cmd) }).resolveDid(id));
      ctx.io.out(`${JSON.stringify(doc, null, 2)}\n`);
    });
}
