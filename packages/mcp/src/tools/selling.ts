import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { ExchangeClient } from '@agent-exchange/client';
import { CreateServiceBody, ServiceView, UpdateServiceBody } from '@aex/contracts';
import { AWAITING_DELIVERY, checkAgainstContract, describeProblems } from '@aex/agent-kit';
import { contract, ok } from './exchange-calls.js';
import { TxOut, Uuid } from './schemas.js';
import { summarize, TransactionSummary } from './summary.js';
import { READ, tool, ToolFailure, WRITE } from './tool.js';

// The provider's tools: its services and what it owes.

export const registerService = tool({
  name: 'register_service',
  title: 'Register a service',
  description: 'Offers a new service on the exchange as this agent: name, description, category, version (semver), input and output JSON Schemas (2020-12), pricing in cents and SLA. Examples must pass the schemas.',
  input: CreateServiceBody,
  output: Type.Object({ service: ServiceView }),
  annotations: WRITE,
  provider: true,
  async run(args, ctx) {
    return { service: ok(await ctx.client.createService(args)) };
  },
});

/** A provider tool that changes one of the agent's services (PATCH /v1/services/{id}). */
const serviceChange = <I extends TSchema>(name: string, title: string, description: string, input: I, changes: (args: Static<I>) => UpdateServiceBody) =>
  tool({
    name, title, description, input,
    output: Type.Object({ service: ServiceView }),
    annotations: { ...WRITE, idempotentHint: true },
    provider: true,
    async run(args, ctx) {
      return { service: ok(await ctx.client.updateService((args as { serviceId: string }).serviceId, changes(args))) };
    },
  });

export const updateService = serviceChange(
  'update_service', 'Change a service',
  'Changes one of this agent\'s services (description, version, schemas, pricing, SLA, tags, examples, status). Transactions already made keep the contract they were made with.',
  Type.Object({ serviceId: Uuid, changes: UpdateServiceBody }, { additionalProperties: false }),
  (args) => args.changes,
);

export const pauseService = serviceChange(
  'pause_service', 'Pause or resume a service',
  'Pauses one of this agent\'s services (it leaves search and cannot be bought; transactions in progress go on) or resumes it.',
  Type.Object({ serviceId: Uuid, paused: Type.Boolean({ default: true }) }, { additionalProperties: false }),
  (args) => ({ status: args.paused === false ? 'active' : 'paused' }),
);

export const listPendingDeliveries = tool({
  name: 'list_pending_deliveries',
  title: 'Transactions waiting for delivery',
  description: 'The transactions in which this agent is the provider and owes a delivery (funds held, work started, or an earlier delivery failed validation), oldest deadline first, each with its input and the delivery attempts used and allowed.',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({ transactions: Type.Array(TransactionSummary) }),
  annotations: READ,
  provider: true,
  async run(_args, ctx) {
    const lists = await Promise.all(AWAITING_DELIVERY.map(async (status) => ok(await ctx.client.listTransactions({ role: 'provider', status, limit: 100 } as Parameters<ExchangeClient['listTransactions']>[0]))));
    const all = lists.flat().sort((a, b) => (a.expiresAt ?? '').localeCompare(b.expiresAt ?? ''));
    return { transactions: all.map((t) => summarize(t, { work: true })) };
  },
});

export const deliver = tool({
  name: 'deliver',
  title: 'Deliver an output',
  description: 'Delivers the output of a transaction this agent provides. The output is checked against the service\'s outputSchema first; an output the exchange refuses uses up one of the delivery attempts the SLA allows.',
  input: Type.Object({ transactionId: Uuid, output: Type.Record(Type.String(), Type.Unknown()) }, { additionalProperties: false }),
  output: TxOut,
  annotations: WRITE,
  provider: true,
  async run(args, ctx) {
    const tx = ok(await ctx.client.getTransaction(args.transactionId));
    if (tx.providerAgentId !== ctx.profile.agentId) throw new ToolFailure('This agent is not the provider of that transaction.');
    const service = await contract(ctx, tx.serviceId);
    // The transaction keeps the contract it was made with: checked here only when that is the current one.
    if (service.version === tx.serviceVersion) {
      const check = checkAgainstContract(service.outputSchema, args.output, '/output');
      if (check.ok === false) throw new ToolFailure(`Not sent (no attempt used): the output does not pass the service's outputSchema:\n${describeProblems(check.problems)}`);
    }
    const after = ok(await ctx.client.deliver(tx.id, { output: args.output }));
    return { transaction: summarize(after, { serviceName: service.name }), note: after.status === 'delivered' ? 'Delivered: the consumer now accepts it or disputes it.' : `The transaction is ${after.status}.` };
  },
});
