import type { Command } from 'commander';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { readJson } from '../json-file.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { table, usd } from '../text-format.js';

interface DiscoverOptions {
  maxBudgetCents?: number;
  minTrust?: number;
  category?: string;
  input?: string;
  limit: number;
}

/** `aex discover "need"`: services by need, ranked by the exchange. */
export function registerDiscoverCommand(program: Command, ctx: Context): void {
  program
    .command('discover <need>')
    .description('find services by need, in plain words')
    .option('--max-budget-cents <n>', 'only services that fit', cents('--max-budget-cents'))
    .option('--min-trust <n>', 'only providers trusted at least this much (0–100)', int('--min-trust'))
    .option('--category <category>')
    .option('--input <file>', 'an input you have (JSON): services that accept it rank first')
    .option('--limit <n>', 'how many', int('--limit'), 10)
    // DELIVERS is the provider's liveness (D22.3): delivering, unproven or stalled.
    .action(async (need: string, o: DiscoverOptions, cmd: Command) => {
      const found = ok(await actingAgent(ctx, cmd).client.discover({
        need, limit: o.limit,
        ...(o.maxBudgetCents !== undefined ? { maxBudgetCents: o.maxBudgetCents } : {}), ...(o.minTrust !== undefined ? { minTrustScore: o.minTrust } : {}),
        ...(o.category ? { category: o.category } : {}), ...(o.input ? { inputAvailable: readJson(o.input, 'input') } : {}),
      }));
      show(ctx, cmd, found, (d) => table(d.matches, [['SERVICE', (m) => m.serviceId], ['NAME', (m) => m.serviceName], ['PROVIDER', (m) => m.agentName], ['PRICE', (m) => usd(m.priceCents)], ['LATENCY', (m) => `${m.estimatedLatencyMs} ms`], ['TRUST', (m) => m.trustScore], ['DELIVERS', (m) => m.liveness.state], ['FIT', (m) => m.compatibilityScore.toFixed(2)]])
        + d.warnings.map((w) => `note: ${w.message}\n`).join('')
        // D22.2: the purchase names the discover it came from, so that discovery learns from it.
        + (d.matches.length > 0 && d.queryId ? `Buy one with: aex buy SERVICE --input FILE --query-id ${d.queryId}\n` : ''));
    });
}
