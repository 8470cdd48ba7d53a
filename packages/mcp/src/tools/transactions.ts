import { Type } from '@sinclair/typebox';
import type { ExchangeClient } from '@agent-exchange/client';
import { NegotiationView, TransactionView } from '@aex/contracts';
import { ok } from './exchange-calls.js';
import { nextStep } from './next-step.js';
import { TxId } from './schemas.js';
import { summarize, TransactionSummary } from './summary.js';
import { READ, tool } from './tool.js';

export const getTransaction = tool({
  name: 'get_transaction',
  title: 'Read a transaction',
  description: 'A transaction as it is now, every field (the other tools answer a summary): status, price, fee, input, output once delivered, deadlines, attempts, and for a negotiation its messages.',
  input: TxId,
  output: Type.Object({ transaction: TransactionView, negotiation: Type.Array(NegotiationView), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const tx = ok(await ctx.client.getTransaction(args.transactionId));
    const negotiation = tx.status === 'negotiating' || tx.agreedPriceCents === null ? ok(await ctx.client.negotiations(tx.id)) : [];
    return { transaction: tx, negotiation, note: tx.consumerAgentId === ctx.profile.agentId ? nextStep(tx.status) : `You are the provider; the transaction is ${tx.status}.` };
  },
});

export const listTransactions = tool({
  name: 'list_transactions',
  title: 'List transactions',
  description: 'The agent\'s transactions, newest first, as consumer or provider: a summary of each (get_transaction answers every field).',
  input: Type.Object({
    role: Type.Optional(Type.Union([Type.Literal('consumer'), Type.Literal('provider')])),
    status: Type.Optional(Type.String({ maxLength: 40 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  }, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionSummary) }),
  annotations: READ,
  async run(args, ctx) {
    const transactions = ok(await ctx.client.listTransactions({ ...args, limit: args.limit ?? 20 } as Parameters<ExchangeClient['listTransactions']>[0]));
    return { transactions: transactions.map((t) => summarize(t)) };
  },
});
