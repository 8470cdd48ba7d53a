import { Type } from '@sinclair/typebox';
import type { ExchangeClient } from '@agent-exchange/client';
import { DisputeView, OpenDisputeBody, RespondDisputeBody } from '@aex/contracts';
import { ok } from './exchange-calls.js';
import { TxId, Uuid } from './schemas.js';
import { IRREVERSIBLE, READ, tool, WRITE } from './tool.js';

export const openDispute = tool({
  name: 'open_dispute',
  title: 'Open a dispute',
  description: 'Disputes a delivery instead of accepting it: the funds stay held while the provider answers (refund, partial refund, redo or contest; an operator decides a contest).',
  input: Type.Composite([TxId, OpenDisputeBody], { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: WRITE,
  async run({ transactionId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.openDispute(transactionId, body as Parameters<ExchangeClient['openDispute']>[1])) };
  },
});

export const getDispute = tool({
  name: 'get_dispute',
  title: 'Read a dispute',
  description: 'The dispute of a transaction: its status, the provider\'s proposal, the outcome and every message.',
  input: TxId,
  output: Type.Object({ dispute: DisputeView }),
  annotations: READ,
  async run(args, ctx) {
    return { dispute: ok(await ctx.client.transactionDispute(args.transactionId)) };
  },
});

export const decideDispute = tool({
  name: 'decide_dispute',
  title: 'Decide on a dispute proposal',
  description: 'As the consumer, accepts or refuses the provider\'s proposal (partial refund or redo). Refusing escalates the dispute to the operator.',
  input: Type.Object({ disputeId: Uuid, accept: Type.Boolean(), message: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: IRREVERSIBLE,
  async run({ disputeId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.decideDispute(disputeId, body)) };
  },
});

// The provider's answer.

export const respondDispute = tool({
  name: 'respond_dispute',
  title: 'Answer a dispute',
  description: 'As the provider, answers a dispute: consumer_wins (full refund), partial_refund (with refundCents), provider_redo (deliver again) or contest (an operator decides).',
  input: Type.Composite([Type.Object({ disputeId: Uuid }), RespondDisputeBody], { additionalProperties: false }),
  output: Type.Object({ dispute: DisputeView }),
  annotations: IRREVERSIBLE,
  provider: true,
  async run({ disputeId, ...body }, ctx) {
    return { dispute: ok(await ctx.client.respondDispute(disputeId, body as Parameters<ExchangeClient['respondDispute']>[1])) };
  },
});
