import { Type } from '@sinclair/typebox';
import { DiscoveryMatch, ServiceView } from '@aex/contracts';
import { contract, ok } from './exchange-calls.js';
import { Uuid } from './schemas.js';
import { READ, tool } from './tool.js';

export const searchServices = tool({
  name: 'search_services',
  title: 'Search services',
  description:
    'Finds services on the exchange by what you need, in plain words (matched by meaning), with their price in cents, expected latency, the provider\'s trust score (0–100), whether the provider delivers (liveness.state: skip `stalled` ones, whose recent purchases went undelivered) and how well each fits (compatibility 0–1). ' +
    'Give `inputAvailable` (the input you have) to rank services that accept it first. Then read a service\'s contract with get_service before buying, ' +
    'and pass the `queryId` answered here to buy_service or open_session: the exchange learns from how the purchase ends which services serve such needs.',
  input: Type.Object({
    need: Type.String({ minLength: 1, maxLength: 2000, description: 'What you need done, e.g. "count the words in a text"' }),
    maxBudgetCents: Type.Optional(Type.Integer({ minimum: 0, description: 'Only services whose price fits' })),
    minTrustScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    category: Type.Optional(Type.String({ maxLength: 100 })),
    inputAvailable: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'An input you have; services that accept it rank first' })),
    urgency: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('normal'), Type.Literal('high')], { description: 'high favours fast services, low cheap ones' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, default: 5 })),
  }, { additionalProperties: false }),
  output: Type.Object({
    matches: Type.Array(Type.Omit(DiscoveryMatch, ['inputSchema', 'outputSchema'])),
    totalMatches: Type.Integer(),
    queryId: Type.String({ format: 'uuid', description: 'Pass it to buy_service or open_session when buying one of these (D22.2)' }),
    warnings: Type.Array(Type.String()),
  }),
  annotations: READ,
  async run(args, ctx) {
    const found = ok(await ctx.client.discover({ ...args, limit: args.limit ?? 5 }));
    return {
      matches: found.matches.map(({ inputSchema: _i, outputSchema: _o, ...m }) => m),
      totalMatches: found.totalMatches,
      queryId: found.queryId,
      warnings: found.warnings.map((w) => w.message),
    };
  },
});

export const getService = tool({
  name: 'get_service',
  title: 'Read a service contract',
  description: 'The full contract of a service: its input and output JSON Schemas, pricing (cents), SLA (latency, timeout, retries) and examples. The input you buy with must pass its inputSchema.',
  input: Type.Object({ serviceId: Uuid }, { additionalProperties: false }),
  output: Type.Object({ service: ServiceView }),
  annotations: READ,
  async run(args, ctx) {
    return { service: await contract(ctx, args.serviceId) };
  },
});
