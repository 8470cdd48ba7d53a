import { Type } from '@sinclair/typebox';
import { WalletView } from '@aex/contracts';
import { ok } from './exchange-calls.js';
import { READ, tool } from './tool.js';

const Budget = Type.Object({ budgetCents: Type.Integer(), spentCents: Type.Integer(), remainingCents: Type.Integer(), maxPerCallCents: Type.Integer() });

export const getBalance = tool({
  name: 'get_balance',
  title: 'Wallet balance and budget',
  description: 'The agent\'s wallet (balance, held and available cents) and, when spending is enabled, what is left of the budget the human set for this session.',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ wallet: WalletView, budget: Type.Union([Budget, Type.Null()]) }),
  annotations: READ,
  async run(_args, ctx) {
    return { wallet: ok(await ctx.client.getWallet(ctx.profile.agentId)), budget: ctx.guard.enabled ? ctx.guard.state : null };
  },
});
