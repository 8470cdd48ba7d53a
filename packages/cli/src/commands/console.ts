import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { fromExchange, ok } from '../exchange-outcome.js';
import { CliError } from '../exit-codes.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';

/** What opens an address in the person's browser, by platform. */
const OPENERS: Partial<Record<NodeJS.Platform, string>> = { darwin: 'open', linux: 'xdg-open', freebsd: 'xdg-open', openbsd: 'xdg-open' };

/**
 * `aex console [--open]` (D23.4): a one-time link that signs the profile's owner agent in to the web
 * console, valid for two minutes; the key itself is never shown. `--open` opens it in the browser.
 */
export function registerConsoleCommand(program: Command, ctx: Context): void {
  program
    .command('console')
    .description('a one-time link (2 minutes) that signs this profile\'s owner agent in to the web console, without showing the key')
    .option('--open', 'open the link in the browser (xdg-open, or open on macOS) as well as printing it')
    .action(async (o: { open?: boolean }, cmd: Command) => {
      const { client } = actingAgent(ctx, cmd);
      const answer = await client.consoleSignInLink();
      // Another agent of the account is refused: say which profile signs in.
      if (!answer.ok && answer.error.code === 'FORBIDDEN') {
        const refused = fromExchange(answer.error);
        throw new CliError(`${refused.message}\nSign in with the owner agent's profile: aex --profile OWNER console`, refused.exitCode, refused.details);
      }
      const link = ok(answer);
      const opened = o.open ? openInBrowser(link.url, ctx.env.PATH ?? '') : undefined;
      show(ctx, cmd, { ...link, ...(o.open ? { opened: opened === null } : {}) }, () =>
        `Open this link to sign in to the console; it works once, until ${link.expiresAt}:\n${link.url}\n`
        + (opened === null ? 'Opened in your browser.\n' : opened ? `Not opened: ${opened}\n` : ''));
    });
}

/** Hands the address to the platform's opener: null when it was, else why not. */
function openInBrowser(url: string, path: string): string | null {
  const opener = OPENERS[process.platform];
  const found = opener && path.split(delimiter).filter(Boolean).map((dir) => join(dir, opener)).find((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) return `no ${opener ?? 'browser opener'} found on this system; open the link yourself.`;
  spawn(found, [url], { detached: true, stdio: 'ignore' }).on('error', () => undefined).unref();
  return null;
}
