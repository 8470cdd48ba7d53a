import {
  AppError, isAppError, subjects, validator,
  type Operation, type OpInput, type OpOutput, type Principal, type RequestSignature, type RpcReply, type RpcRequest, type ServiceName,
} from '@aex/contracts';
import { BusUnavailableError, PayloadTooLargeError, type Bus, type MsgHeaders, type Stoppable } from './bus/types.js';
import type { ExchangeConfig } from './config.js';
import type { ServiceDb } from './db/connect.js';
import type { Transactor } from './messaging/transaction-runner.js';
import { isOperationKeyTaken, operationKeyTaken, type OperationRecord } from './idempotency/first-copy.js';
import { IdempotencyRecords } from './idempotency/records.js';
import { operationKeyOf } from './idempotency/reply-cipher.js';
import type { Logger } from './logger.js';
import { encodeReply, REPLY_HEADROOM_BYTES } from './reply-budget.js';
import { askDelivered, askHedged, askKeyedWrite, OUTCOME_UNKNOWN } from './rpc-attempts.js';
import { toRpcReply, type EffectReply, type EffectRunner, type Reply } from './replies.js';

export { groupCommitted, toRpcReply, type EffectReply, type EffectRunner, type Reply } from './replies.js';

export interface HandlerContext {
  requestId: string;
  principal: Principal | null;
  admin: boolean;
  /** The gateway verified an X-AE-Signature by the principal's current signing key (D3.5 `signed` mode). */
  signed: boolean;
  /** A signed request's X-AE-Signature and timestamp, as the gateway verified them (a delivery's go into its receipt, D18.2). */
  signature?: RequestSignature;
  logger: Logger;
  /** The one way a handler changes state (D5.5): see `EffectRunner`. */
  effect: EffectRunner;
  /** Whether the request carries an Idempotency-Key the owner claimed (then its effect must be made by `effect`). */
  keyed: boolean;
  /**
   * The first copy of a write under an operation key the gateway made (not `keyed`): an effect made
   * without `effect` (a step at commit, a group commit) writes the key's row with it through this.
   */
  operationRecord?: OperationRecord;
  /**
   * For a keyed request: a name every retry under the same key shares (`operationKeyOf` the key in
   * its scope), from which a call to another system derives its own idempotency key, so a retry after a
   * crash between that system's answer and our commit finds the first call's outcome there.
   */
  operationKey?: string;
  /** Bytes the reply's data may take on the bus; lists longer than this are cut (see reply-budget.ts). */
  replyBudgetBytes: number;
}

/** An operation's handler; one that changes state must answer with what `ctx.effect` made. */
export type OperationHandler<O extends Operation> = (
  input: OpInput<O>,
  ctx: HandlerContext,
) => Promise<O extends { effect: true } ? EffectReply<OpOutput<O>> : Reply<OpOutput<O>>>;

export interface ServeOptions<Ops extends Record<string, Operation>> {
  bus: Bus;
  service: ServiceName;
  ops: Ops;
  handlers: { [K in keyof Ops]: OperationHandler<Ops[K]> };
  logger: Logger;
  /** The service's transactions: keyed requests are recorded in its database, with their effects (D5.5). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  tx: Transactor<any>;
  /** The service's pool of claim transactions (`ServiceDb.claims`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  claims: ServiceDb<any>['claims'];
  config: Pick<ExchangeConfig, 'IDEMPOTENCY_TTL_HOURS' | 'RPC_TIMEOUT_MS'>;
  /** The service's clock: when a stored answer expires (D5.2). */
  now?: () => Date;
  /**
   * What a write does after its effect commits, done again when a repeat under its key finds the
   * effect committed and answers without running the handler: the replica that committed it may
   * have died before doing it (identity telling the replicas' caches of a change, D2.5).
   */
  replayed?: (operation: keyof Ops & string, input: unknown, logger: Logger) => Promise<void>;
}

/** The caller as an authenticated agent, or 401 (the gateway authenticates; services re-check). */
export function requireAgent(ctx: HandlerContext): Principal {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'This operation needs an authenticated agent.');
  return ctx.principal;
}

/** D6.5: a deactivated agent still authenticates but cannot start anything new (403 AGENT_INACTIVE). */
export function requireActive(caller: Principal): void {
  if (caller.status !== 'active') throw new AppError('AGENT_INACTIVE', 'A deactivated agent cannot start anything new.', { details: { status: caller.status } });
}

const internalError = (): RpcReply => ({ ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: 'The exchange failed to handle the request.' }] });

function errorReply(err: unknown, log: Logger): RpcReply {
  if (isAppError(err)) return { ok: false, status: err.status, errors: err.entries };
  // A first copy's effect made at commit found its operation key taken (first-copy.ts).
  if (isOperationKeyTaken(err)) return errorReply(operationKeyTaken(), log);
  log.error({ err }, 'operation failed');
  return internalError();
}

/**
 * Serves a set of operations of one service over request/reply, one queue group per service so
 * replicas share the load. Every request is validated against the operation's contract before the
 * handler sees it (a message is checked against its contract, never cast); a keyed request runs under its Idempotency-Key record (D5.5); the
 * reply is encoded once and fitted to the bus's payload budget (a stored answer is fitted the same
 * way when replayed, so first answer and replays stay the same bytes); AppErrors become error replies, anything else a
 * masked 500.
 */
export async function serveOperations<Ops extends Record<string, Operation>>(opts: ServeOptions<Ops>): Promise<Stoppable> {
  const { bus, service, ops, handlers, logger } = opts;
  const records = new IdempotencyRecords({
    tx: opts.tx,
    claims: opts.claims,
    ttlMs: opts.config.IDEMPOTENCY_TTL_HOURS * 3_600_000,
    // Well past the gateway's wait, so a slow handler keeps its claim while anyone still waits for it.
    abandonAfterMs: 3 * opts.config.RPC_TIMEOUT_MS,
    logger,
    ...(opts.now && { now: opts.now }),
  });
  records.start();
  const budget = bus.maxPayload - REPLY_HEADROOM_BYTES;
  const subs: Stoppable[] = [];
  for (const [key, op] of Object.entries(ops)) {
    const check = validator(op.input);
    const handler = handlers[key as keyof Ops] as unknown as (input: unknown, ctx: HandlerContext) => Promise<Reply<unknown>>;
    const subject = subjects.rpc(bus.namespace, service, op.name);
    const answer = async (raw: unknown, log: Logger, requestId: string): Promise<RpcReply> => {
      const req = raw as RpcRequest | null;
      try {
        if (!req || typeof req !== 'object' || !req.ctx) throw new AppError('VALIDATION_ERROR', 'Malformed request.');
        const input = check.check(req.input);
        if (!input.ok) return { ok: false, status: 400, errors: input.errors };
        const base = { requestId, principal: req.ctx.principal ?? null, admin: req.ctx.admin === true, signed: req.ctx.signed === true, ...(req.ctx.signed && req.ctx.signature && { signature: req.ctx.signature }), ...(req.ctx.idempotency && { operationKey: operationKeyOf(req.ctx.idempotency.scope, req.ctx.idempotency.key) }), logger: log, replyBudgetBytes: budget };
        if (op.auth === 'agent') requireAgent(base as unknown as HandlerContext);
        if (op.auth === 'admin' && !base.admin) throw new AppError('UNAUTHENTICATED', 'This operation needs the operator token.');
        const replayed = opts.replayed && (() => opts.replayed!(key, input.value, log));
        return await records.run(req.ctx.idempotency, requestId, async (effect, operationRecord) => {
          const keyed = req.ctx.idempotency !== undefined && operationRecord === undefined;
          try {
            return toRpcReply(await handler(input.value, { ...base, keyed, effect, ...(operationRecord && { operationRecord }) }));
          } catch (err) {
            return errorReply(err, log);
          }
        }, replayed);
      } catch (err) {
        return errorReply(err, log);
      }
    };
    subs.push(
      await bus.serve(subject, service, async (raw: unknown, headers: MsgHeaders) => {
        const requestId = (raw as RpcRequest | null)?.ctx?.requestId ?? headers['x-request-id'] ?? 'unknown';
        const log = logger.child({ requestId, op: `${service}.${op.name}` });
        return encodeReply(await answer(raw, log, requestId), budget, log);
      }),
    );
  }
  return {
    stop: async () => {
      records.stop();
      await Promise.all(subs.map((s) => s.stop()));
    },
  };
}

/**
 * Calls an operation. A read is hedged across the service's replicas; a write with an operation key
 * (`ctx.idempotency`) is asked again under its key before the timeout; "no responders" is asked again
 * for a moment (rpc-attempts.ts). A service that never took the request, or a read nobody answered,
 * becomes 503 SERVICE_UNAVAILABLE; a write delivered but not answered becomes 202 with
 * `OUTCOME_UNKNOWN_STATUS` (its effect may have committed: a 503 would hide it) — with or without a key.
 */
export async function callOperation<O extends Operation>(
  bus: Bus,
  op: O,
  req: RpcRequest<OpInput<O>>,
  opts: { timeoutMs: number; headers?: MsgHeaders },
): Promise<RpcReply<OpOutput<O>>> {
  const subject = subjects.rpc(bus.namespace, op.service, op.name);
  const headers = { 'x-request-id': req.ctx.requestId, ...opts.headers };
  const send = (timeoutMs: number) => bus.request(subject, req, { timeoutMs, headers });
  try {
    if (!op.effect) return (await askHedged(send, opts.timeoutMs)) as RpcReply<OpOutput<O>>;
    if (!req.ctx.idempotency) {
      const start = Date.now();
      try {
        return (await askDelivered(send, start + opts.timeoutMs, start + Math.min(1_000, opts.timeoutMs))) as RpcReply<OpOutput<O>>;
      } catch (err) {
        // Taken and not answered: it may have committed, and without a key it cannot be asked again.
        if (err instanceof BusUnavailableError && !err.noResponders) return outcomeUnknown(op, false);
        throw err;
      }
    }
    const { firstCopy: _first, ...repeat } = req.ctx.idempotency;
    const sendAgain = (timeoutMs: number) => bus.request(subject, { ...req, ctx: { ...req.ctx, idempotency: repeat } }, { timeoutMs, headers });
    const answered = await askKeyedWrite(send, opts.timeoutMs, isInUse, sendAgain, (listener) => bus.onServerLost(listener));
    if (answered === OUTCOME_UNKNOWN) return outcomeUnknown(op);
    const reply = answered.reply as RpcReply<OpOutput<O>>;
    if (!answered.again || !reply.replayed) return reply;
    // The gateway's own repeat found the first copy's stored outcome: to the client it is the first answer.
    const { replayed: _replayed, ...first } = reply;
    return first as RpcReply<OpOutput<O>>;
  } catch (err) {
    if (err instanceof BusUnavailableError) {
      return { ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE', message: `The ${op.service} service did not answer in time.` }] };
    }
    // The request itself is larger than the bus carries: it is the caller's input (413), never a timeout.
    if (err instanceof PayloadTooLargeError) {
      return {
        ok: false,
        status: 413,
        errors: [{ code: 'PAYLOAD_TOO_LARGE', message: `The request is too large to be handled (${err.bytes} bytes with its context; at most ${err.limit}).`, details: { bytes: err.bytes, limit: err.limit } }],
      };
    }
    throw err;
  }
}

/** The status of a write whose outcome is not known yet (D5.4, D9.9, docs/idempotency.md). */
export const OUTCOME_UNKNOWN_STATUS = 202;

const isInUse = (reply: unknown) => {
  const r = reply as RpcReply | null;
  return r !== null && typeof r === 'object' && !r.ok && r.errors.some((e) => e.code === 'IDEMPOTENCY_KEY_IN_USE');
};

/**
 * The 202 of a write that reached its service and got no answer: its effect may have committed.
 * Keyed (D5.4): the service neither answered nor let a repeat under the key learn the outcome; the
 * client learns it by repeating the request with the same key. Unkeyed (D9.9's style): nothing can be
 * asked again, so the answer says the outcome is unknown instead of a 503 that would read as "not
 * applied" and invite a second copy; the gateway adds where the resource can be read.
 */
function outcomeUnknown(op: Operation, keyed = true): RpcReply {
  const error = keyed
    ? {
      code: 'IDEMPOTENCY_KEY_IN_USE' as const,
      message: `The outcome is not known yet: the ${op.service} service took the request but has not answered, and it may have been applied. Repeat the request with the Idempotency-Key of this answer's header (your own, or the one the exchange made for it) to learn its outcome.`,
      details: { outcome: 'unknown', retryAfterSeconds: 1 },
    }
    : {
      code: 'SERVICE_UNAVAILABLE' as const,
      message: `The outcome is not known: the ${op.service} service took the request but did not answer in time, and it may have been applied. Read the resource before sending it again; a write sent with an Idempotency-Key can be repeated safely instead.`,
      details: { outcome: 'unknown' },
    };
  return { ok: false, status: OUTCOME_UNKNOWN_STATUS, errors: [error] };
}

/** Calls an operation and returns its data, throwing the reply's errors as an AppError. */
export async function callOrThrow<O extends Operation>(bus: Bus, op: O, req: RpcRequest<OpInput<O>>, timeoutMs: number): Promise<OpOutput<O>> {
  const reply = await callOperation(bus, op, req, { timeoutMs });
  if (reply.ok) return reply.data;
  throw AppError.many(reply.errors);
}
