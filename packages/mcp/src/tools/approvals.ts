import { Type, type Static } from '@sinclair/typebox';
import type { Outcome } from '@agent-exchange/client';
import type { TransactionView } from '@aex/contracts';
import { ok } from './exchange-calls.js';
import { approvalWhy } from './next-step.js';
import { TxId, TxOut, Uuid } from './schemas.js';
import { summarize, TransactionSummary } from './summary.js';
import { IRREVERSIBLE, READ, tool, ToolFailure, type ToolContext } from './tool.js';

// D10.3: for the account's owner agent.

export const listApprovals = tool({
  name: 'list_approvals',
  title: 'Purchases awaiting approval',
  description:
    'For the account\'s owner agent: the purchases of the account\'s agents that wait for a human\'s approval (their price is above what the agents\' spending rules approve), newest first, with the price, the rule and the deadline. ' +
    '`state`: pending (default), decided or all. Another agent is refused (403).',
  input: Type.Object({
    state: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('decided'), Type.Literal('all')])),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  }, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionSummary), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const accountId = ctx.profile.accountId ?? ok(await ctx.client.getAgent(ctx.profile.agentId) as Outcome<{ accountId: string }>).accountId;
    const transactions = ok(await ctx.client.listApprovals(accountId, { state: args.state ?? 'pending', limit: args.limit ?? 20 }));
    const pending = transactions.filter((t) => t.status === 'awaiting_approval').length;
    return { transactions: transactions.map((t) => summarize(t, { approval: true })), note: pending ? `${pending} purchase(s) await a decision: approve_purchase (asks your human first) or deny_purchase.` : 'Nothing awaits a decision.' };
  },
});

export const approvePurchase = tool({
  name: 'approve_purchase',
  title: 'Approve a purchase',
  description:
    'For the account\'s owner agent: approves a purchase awaiting approval, so its price is held from the buying agent\'s wallet and the provider may start. ' +
    'The human is asked to confirm first (MCP elicitation); a client that cannot ask cannot approve here — the human then uses `aex approvals approve` or the console.',
  input: TxId,
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const tx = await pendingApproval(ctx, args.transactionId);
    const answer = await ctx.askHuman(`Approve the purchase ${tx.id}: ${tx.agreedPriceCents} cents by agent ${tx.consumerAgentId} for service ${tx.serviceId}${approvalWhy(tx)}?`);
    if (answer === 'declined') throw new ToolFailure('Not approved: the human declined. deny_purchase cancels it; left alone it is cancelled when its approval expires.');
    if (answer === 'unsupported') {
      throw new ToolFailure(`Not approved: an approval is a human's decision, and this client cannot ask the human (no MCP elicitation). They approve with \`aex approvals approve ${tx.id}\` or in the console (/console/).`);
    }
    const after = ok(await ctx.client.approve(tx.id));
    return { transaction: summarize(after, { approval: true }), note: after.status === 'funds_held' ? 'Approved: the price is held and the provider may start.' : `Approved; the transaction is ${after.status}.` };
  },
});

export const denyPurchase = tool({
  name: 'deny_purchase',
  title: 'Deny a purchase',
  description: 'For the account\'s owner agent: denies a purchase awaiting approval. It is cancelled (`approval_denied`) and nothing is paid; the reason is kept with it.',
  input: Type.Object({ transactionId: Uuid, reason: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: false }),
  output: TxOut,
  annotations: IRREVERSIBLE,
  async run(args, ctx) {
    const after = ok(await ctx.client.deny(args.transactionId, args.reason ? { reason: args.reason } : {}));
    return { transaction: summarize(after, { approval: true }), note: `Denied: the transaction is ${after.status} (${after.statusReason}).` };
  },
});

/**
 * A purchase awaiting the account's approval, from the owner's inbox — what the human is asked about.
 * (The owner agent is not a party of its agents' purchases, so it cannot read them one by one.)
 */
async function pendingApproval(ctx: ToolContext, transactionId: string): Promise<Static<typeof TransactionView>> {
  const accountId = ctx.profile.accountId ?? ok(await ctx.client.getAgent(ctx.profile.agentId) as Outcome<{ accountId: string }>).accountId;
  for (let offset = 0; ; offset += 100) {
    const page = ok(await ctx.client.listApprovals(accountId, { state: 'pending', limit: 100, offset }));
    const found = page.find((t) => t.id === transactionId);
    if (found) return found;
    if (page.length < 100) throw new ToolFailure(`No purchase ${transactionId} awaits this account's approval: list_approvals shows those that do.`);
  }
}
