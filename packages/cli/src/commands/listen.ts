import type { Command } from 'commander';
import type { Context } from '../context.js';
import { globalOptions } from '../global-options.js';
import { int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { listen } from '../webhook-listener.js';

interface ListenOptions {
  port: number;
  host: string;
  publicUrl?: string;
  forwardTo?: string;
  agent?: string;
  keep?: boolean;
}

/** `aex listen`: the agent's webhooks received here until stopped (webhook-listener.ts). */
export function registerListenCommand(program: Command, ctx: Context): void {
  program
    .command('listen')
    .description('receive the agent\'s webhooks here: verified, printed, optionally forwarded (like stripe listen)')
    .option('--port <n>', 'port to listen on (default: any free one)', int('--port'), 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--public-url <url>', 'the URL the exchange should call, when it is not http://HOST:PORT/webhooks (a tunnel)')
    .option('--forward-to <url>', 'send every verified event on to this URL')
    .option('--agent <agentId>', 'another agent of the account (owner agent)')
    .option('--keep', 'leave the webhook URL pointing here on exit')
    .action(async (o: ListenOptions, cmd: Command) => {
      const { profile, client } = actingAgent(ctx, cmd);
      const until = ctx.stopped();
      await listen(client, ctx.io, { agentId: o.agent ?? profile.agentId, host: o.host, port: o.port, keep: Boolean(o.keep), json: Boolean(globalOptions(cmd).json), until, ...(o.publicUrl ? { publicUrl: o.publicUrl } : {}), ...(o.forwardTo ? { forwardTo: o.forwardTo } : {}) });
    });
}
