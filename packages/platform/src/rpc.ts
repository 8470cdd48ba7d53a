import {
  AppError, isAppError, subjects, validator,
  type Operation, type OpInput, type OpOutput, type PaginationInfo, type Principal, type RpcReply, type RpcRequest, type ServiceName,
} from '@aex/contracts';
import { BusUnavailableError, type Bus, type MsgHeaders, type Stoppable } from './bus/types.js';
import type { Logger } from './logger.js';

export interface HandlerContext {
  requestId: string;
  principal: Principal | null;
  admin: boolean;
  logger: Logger;
}

/** What a handler returns on success; failures are thrown or returned as AppError. */
export interface Reply<T> {
  data: T;
  status?: number;
  pagination?: PaginationInfo;
}

export type OperationHandler<O extends Operation> = (input: OpInput<O>, ctx: HandlerContext) => Promise<Reply<OpOutput<O>>>;

/** The caller as an authenticated agent, or 401 (the gateway authenticates; services re-check). */
export function requireAgent(ctx: HandlerContext): Principal {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'This operation needs an authenticated agent.');
  return ctx.principal;
}

/** D6.5: a deactivated agent still authenticates but cannot start anything new (403 AGENT_INACTIVE). */
export function requireActive(caller: Principal): void {
  if (caller.status !== 'active') throw new AppError('AGENT_INACTIVE', 'A deactivated agent cannot start anything new.', { details: { status: caller.status } });
}

/**
 * Serves a set of operations of one service over request/reply, one queue group per service so
 * replicas share the load. Every request is validated against the operation's contract before the
 * handler sees it (STYLE.md 2); AppErrors become error replies, anything else a masked 500.
 */
export async function serveOperations<Ops extends Record<string, Operation>>(
  bus: Bus,
  service: ServiceName,
  ops: Ops,
  handlers: { [K in keyof Ops]: OperationHandler<Ops[K]> },
  logger: Logger,
): Promise<Stoppable> {
  const subs: Stoppable[] = [];
  for (const [key, op] of Object.entries(ops)) {
    const check = validator(op.input);
    const handler = handlers[key as keyof Ops] as unknown as OperationHandler<Operation>;
    const subject = subjects.rpc(bus.namespace, service, op.name);
    subs.push(
      await bus.serve(subject, service, async (raw: unknown, headers: MsgHeaders): Promise<RpcReply> => {
        const req = raw as RpcRequest | null;
        const requestId = req?.ctx?.requestId ?? headers['x-request-id'] ?? 'unknown';
        const log = logger.child({ requestId, op: `${service}.${op.name}` });
        try {
          if (!req || typeof req !== 'object' || !req.ctx) throw new AppError('VALIDATION_ERROR', 'Malformed request.');
          const input = check.check(req.input);
          if (!input.ok) return { ok: false, status: 400, errors: input.errors };
          const ctx: HandlerContext = { requestId, principal: req.ctx.principal ?? null, admin: req.ctx.admin === true, logger: log };
          if (op.auth === 'agent') requireAgent(ctx);
          if (op.auth === 'admin' && !ctx.admin) throw new AppError('UNAUTHENTICATED', 'This operation needs the operator token.');
          const reply = await handler(input.value, ctx);
          return { ok: true, status: reply.status ?? 200, data: reply.data, ...(reply.pagination ? { pagination: reply.pagination } : {}) };
        } catch (err) {
          if (isAppError(err)) return { ok: false, status: err.status, errors: err.entries };
          log.error({ err }, 'operation failed');
          return { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: 'The exchange failed to handle the request.' }] };
        }
      }),
    );
  }
  return { stop: async () => void (await Promise.all(subs.map((s) => s.stop()))) };
}

/** Calls an operation; an unreachable or silent service becomes 503 SERVICE_UNAVAILABLE. */
export async function callOperation<O extends Operation>(
  bus: Bus,
  op: O,
  req: RpcRequest<OpInput<O>>,
  opts: { timeoutMs: number; headers?: MsgHeaders },
): Promise<RpcReply<OpOutput<O>>> {
  try {
    const reply = await bus.request(subjects.rpc(bus.namespace, op.service, op.name), req, {
      timeoutMs: opts.timeoutMs,
      headers: { 'x-request-id': req.ctx.requestId, ...opts.headers },
    });
    return reply as RpcReply<OpOutput<O>>;
  } catch (err) {
    if (err instanceof BusUnavailableError) {
      return { ok: false, status: 503, errors: [{ code: 'SERVICE_UNAVAILABLE', message: `The ${op.service} service did not answer in time.` }] };
    }
    throw err;
  }
}

/** Calls an operation and returns its data, throwing the reply's errors as an AppError. */
export async function callOrThrow<O extends Operation>(bus: Bus, op: O, req: RpcRequest<OpInput<O>>, timeoutMs: number): Promise<OpOutput<O>> {
  const reply = await callOperation(bus, op, req, { timeoutMs });
  if (reply.ok) return reply.data;
  throw AppError.many(reply.errors);
}
