import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { SessionView } from '@aex/contracts';
import type { Context } from '../context.js';
import { ok } from '../exchange-outcome.js';
import { readJson } from '../json-file.js';
import { cents, int } from '../number-arguments.js';
import { actingAgent } from '../profile-loading.js';
import { show } from '../show.js';
import { usd } from '../text-format.js';

/** One line of a session: its money as it stands. */
const line = (s: SessionView) =>
  `Session ${s.id}: ${s.status}${s.statusReason ? ` (${s.statusReason})` : ''} · budget ${usd(s.budgetCents)} · spent ${usd(s.spentCents)} · reserved ${usd(s.reservedCents)} · `
  + `${s.status === 'closed' ? `returned ${usd(s.returnedCents)}` : `left ${usd(s.remainingCents)}`} · ${s.calls} call${s.calls === 1 ? '' : 's'} · expires ${s.expiresAt}\n`;

/**
 * `aex session open|call|close|show|list` (D17.4–D17.6): a prepaid session holds one budget, and its
 * calls reserve from it — no hold, no approval and no saga of their own.
 */
export function registerSessionCommands(program: Command, ctx: Context): void {
  const session = program.command('session').description('prepaid sessions: one hold of a budget for many calls (D17.4)');
  session
    .command('open <serviceId>')
    .description('hold a budget for calls to a service (fixed, per_unit or tiered pricing)')
    .requiredOption('--budget-cents <n>', 'the budget held once; each call reserves its price from it', cents('--budget-cents'))
    .option('--expires-in <seconds>', 'the session closes by itself then (default 3600, at most 86400)', int('--expires-in'))
    .option('--no-auto-verify', 'calls wait for your verify instead of settling on a valid delivery')
    .option('--idempotency-key <key>', 'makes a retry of this command safe (default: a new one each run)')
    .option('--query-id <id>', 'the queryId of the discover you found the service with: discovery learns from how the calls end')
    .action(async (serviceId: string, o: { budgetCents: number; expiresIn?: number; autoVerify: boolean; idempotencyKey?: string; queryId?: string }, cmd: Command) => {
      const s = ok(await actingAgent(ctx, cmd).client.openSession(
        { serviceId, budgetCents: o.budgetCents, ...(o.expiresIn ? { expiresInSeconds: o.expiresIn } : {}), autoVerify: o.autoVerify, ...(o.queryId ? { queryId: o.queryId } : {}) },
        { idempotencyKey: o.idempotencyKey ?? randomUUID() },
      ));
      show(ctx, cmd, s, (d) => `${line(d)}${d.status === 'open' ? `Call it with: aex session call ${d.id} --input FILE\n` : ''}`);
    });
  session
    .command('call <sessionId>')
    .description('a call in an open session: its price reserved from the budget at once')
    .requiredOption('--input <file>', 'the input, a JSON file (- for standard input)')
    .option('--max-units <n>', 'a metered call: reserves the price of n units, pays for those the provider reports', int('--max-units'))
    .option('--units <n>', 'units bought, for per_unit and tiered pricing', int('--units'))
    .option('--idempotency-key <key>', 'makes a retry of this command safe (default: a new one each run)')
    .action(async (sessionId: string, o: { input: string; maxUnits?: number; units?: number; idempotencyKey?: string }, cmd: Command) => {
      const tx = ok(await actingAgent(ctx, cmd).client.callInSession(sessionId, readJson(o.input, 'input'), {
        ...(o.maxUnits ? { maxUnits: o.maxUnits } : {}), ...(o.units ? { units: o.units } : {}), idempotencyKey: o.idempotencyKey ?? randomUUID(),
      }));
      show(ctx, cmd, tx, (d) => `Call ${d.id}: ${d.status}, ${usd(d.agreedPriceCents ?? 0)} reserved from session ${sessionId}.\n`);
    });
  session
    .command('close <sessionId>')
    .description('no new calls; the unspent budget is returned once every call has ended')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.closeSession(id)), line));
  session
    .command('show <sessionId>')
    .description('a session: budget, spent, reserved, what is left, calls')
    .action(async (id: string, _o: unknown, cmd: Command) => show(ctx, cmd, ok(await actingAgent(ctx, cmd).client.getSession(id)), line));
  session
    .command('list')
    .description('your sessions, newest first')
    .option('--status <status>', 'awaiting_approval, opening, open, closing, closed, failed or cancelled')
    .option('--role <role>', 'consumer or provider')
    .action(async (o: { status?: SessionView['status']; role?: 'consumer' | 'provider' }, cmd: Command) => {
      const list = ok(await actingAgent(ctx, cmd).client.listSessions({ ...(o.status ? { status: o.status } : {}), ...(o.role ? { role: o.role } : {}) }));
      show(ctx, cmd, list, (all) => (all.length === 0 ? 'No sessions.\n' : all.map(line).join('')));
    });
}
