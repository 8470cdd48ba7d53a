import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { ReceiptClaims, SessionView } from '@aex/contracts';
import { verifyReceipt } from '@agent-exchange/client';
import { checkAgainstContract, describeProblems } from '@aex/agent-kit';
import { contract, ok, waitFor } from './exchange-calls.js';
import { TxOut, Uuid, WaitSeconds } from './schemas.js';
import { withinLimits } from './spending-limits.js';
import { summarize } from './summary.js';
import { READ, tool, ToolFailure, WRITE } from './tool.js';

const SessionOut = Type.Object({ session: SessionView, note: Type.String() });
const left = (s: SessionView) => `${s.remainingCents} of ${s.budgetCents} cents left, ${s.spentCents} spent in ${s.calls} call${s.calls === 1 ? '' : 's'}`;

export const openSession = tool({
  name: 'open_session',
  title: 'Open a prepaid session',
  description:
    'Holds a budget once for many calls to one service (fixed, per_unit or tiered pricing): each call_in_session then reserves its price from it, with no hold, approval or wait of its own, and settles as soon as a valid delivery comes. ' +
    'The whole budget counts against the per-call cap and the session budget the human set, once, now; calls inside it need no further approval. Close it with close_session to get back what was not spent.',
  input: Type.Object({
    serviceId: Uuid,
    budgetCents: Type.Integer({ minimum: 1, description: 'Held once from the wallet; calls reserve from it' }),
    expiresInSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, description: 'It closes by itself then (default 3600)' })),
    orderRef: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Makes an otherwise identical session a new one' })),
    queryId: Type.Optional(Type.String({ format: 'uuid', description: 'The queryId search_services answered when you found this service: the exchange learns from how its calls end' })),
  }, { additionalProperties: false }),
  output: SessionOut,
  annotations: { ...WRITE, idempotentHint: true },
  spending: true,
  async run(args, ctx) {
    const service = await contract(ctx, args.serviceId);
    const key = `mcp-session-${createHash('sha256').update(JSON.stringify([ctx.profile.agentId, args.serviceId, args.budgetCents, args.expiresInSeconds ?? null, args.orderRef ?? null, ...(args.queryId ? [args.queryId] : [])])).digest('hex').slice(0, 48)}`;
    await withinLimits(ctx, key, args.budgetCents, `a session of "${service.name}"`);
    const opened = ok(await ctx.client.openSession({ serviceId: args.serviceId, budgetCents: args.budgetCents, ...(args.expiresInSeconds ? { expiresInSeconds: args.expiresInSeconds } : {}), ...(args.queryId ? { queryId: args.queryId } : {}) }, { idempotencyKey: key }));
    ctx.guard.commit(key, args.budgetCents);
    const note = opened.status === 'open' ? `Open: ${left(opened)}. Make calls with call_in_session.` : opened.status === 'awaiting_approval' ? 'The budget waits for the account owner\'s approval; calls can be made once it is open.' : `The session is ${opened.status}.`;
    return { session: opened, note };
  },
});

export const callInSession = tool({
  name: 'call_in_session',
  title: 'Call a service inside an open session',
  description:
    'Buys one call inside an open prepaid session: the input is checked against the contract, the price is reserved from the session\'s budget at once (no new approval), and the call waits for the provider\'s delivery, which settles it. ' +
    'Fails with what is left when the budget is short. Give maxUnits for a metered call: the price of that many units is reserved, and only the units the provider reports are paid.',
  input: Type.Object({
    sessionId: Uuid,
    input: Type.Record(Type.String(), Type.Unknown(), { description: 'Must pass the service\'s inputSchema' }),
    units: Type.Optional(Type.Integer({ minimum: 1 })),
    maxUnits: Type.Optional(Type.Integer({ minimum: 1, description: 'A metered call: pay for the units used, at most these' })),
    waitSeconds: WaitSeconds,
  }, { additionalProperties: false }),
  output: TxOut,
  annotations: WRITE,
  async run(args, ctx) {
    const session = ok(await ctx.client.getSession(args.sessionId));
    if (session.status !== 'open') throw new ToolFailure(`The session is ${session.status}: it takes no calls.`);
    const service = await contract(ctx, session.serviceId);
    const check = checkAgainstContract(service.inputSchema, args.input, '/input');
    if (check.ok === false) throw new ToolFailure(`Not sent: the input does not pass the service's inputSchema:\n${describeProblems(check.problems)}`);
    const call = ok(await ctx.client.callInSession(args.sessionId, args.input, { ...(args.units ? { units: args.units } : {}), ...(args.maxUnits ? { maxUnits: args.maxUnits } : {}) }));
    const waited = await waitFor(ctx, call.id, ['settled', 'delivered', 'failed', 'expired', 'cancelled'], args.waitSeconds, 'call');
    const t = waited.transaction;
    return { transaction: summarize(t, { serviceName: service.name }), note: t.status === 'settled' ? `Settled: ${t.agreedPriceCents} cents paid from the session.` : `The call is ${t.status}; get_transaction follows it.` };
  },
});

export const getSession = tool({
  name: 'get_session',
  title: 'Read a prepaid session',
  description: 'A session as it is now: budget, spent, reserved by calls in progress, what is left, calls made.',
  input: Type.Object({ sessionId: Uuid }, { additionalProperties: false }),
  output: SessionOut,
  annotations: READ,
  async run(args, ctx) {
    const s = ok(await ctx.client.getSession(args.sessionId));
    return { session: s, note: `${s.status}: ${left(s)}.` };
  },
});

export const closeSession = tool({
  name: 'close_session',
  title: 'Close a prepaid session',
  description: 'Ends a session: no new calls; what was not spent returns to the wallet once every call in progress has ended.',
  input: Type.Object({ sessionId: Uuid }, { additionalProperties: false }),
  output: SessionOut,
  annotations: { ...WRITE, idempotentHint: true },
  async run(args, ctx) {
    const s = ok(await ctx.client.closeSession(args.sessionId));
    return { session: s, note: s.status === 'closed' ? `Closed: ${s.returnedCents} cents returned.` : `Closing: the rest returns once the ${s.reservedCents} cents reserved by calls in progress are settled or released.` };
  },
});

export const getReceipt = tool({
  name: 'get_receipt',
  title: 'Get and check a purchase\'s receipt',
  description: 'The signed receipt of an ended purchase, checked here against the exchange\'s published keys: proof, to anyone, of what was bought, delivered and paid.',
  input: Type.Object({ transactionId: Uuid }, { additionalProperties: false }),
  output: Type.Object({ receipt: Type.String(), claims: ReceiptClaims, verified: Type.Boolean(), note: Type.String() }),
  annotations: READ,
  async run(args, ctx) {
    const r = ok(await ctx.client.receipt(args.transactionId));
    const checked = await verifyReceipt(r.receipt, await ctx.client.receiptKeys()).then((v) => v.kid, () => null);
    return { receipt: r.receipt, claims: r.claims, verified: checked !== null, note: checked ? `Verified with the exchange's key ${checked}.` : 'The receipt did NOT verify against the exchange\'s published keys.' };
  },
});
