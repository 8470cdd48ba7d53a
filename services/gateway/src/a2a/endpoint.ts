import { createHash } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { A2A_PROTOCOL_VERSION } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, JsonRpcVersionNotSupportedError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { AppError } from '@aex/contracts';
import type { Bus, ExchangeConfig, Logger } from '@aex/platform';
import { RateLimitedError } from '../guards/rate-limit.js';
import { errorResponse, toAppError } from '../http/envelope.js';
import type { Guards } from '../http/pipeline.js';
import { verifiedSignature } from '../http/request-signature.js';
import { UUID } from '../http/input-hygiene.js';
import { A2A_CALL, EXCHANGE_ERROR_CODE, ExchangeRequestHandler, type A2aCall } from './request-handler.js';

/** The A2A methods that only read: limited in the `read` group (D4.1), the others in `write`. */
const READS = new Set(['GetTask', 'ListTasks', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'GetExtendedAgentCard']);
const STREAMING = new Set(['SendStreamingMessage', 'SubscribeToTask']);
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * D21.2: POST /a2a/agents/{providerAgentId}, the A2A JSON-RPC binding for buying a provider
 * agent's services. The exchange's edge comes first, as on every agent route (D1.4): the bearer API
 * key (D2), the rate limit (D4), the request's signature (D3, D20) — all required. Then the SDK's
 * JSON-RPC transport parses the call and hands it to `ExchangeRequestHandler`. A refusal by the edge
 * keeps its HTTP status and is written as a JSON-RPC error whose `data` holds the D1.4 code.
 */
export function serveA2a(app: FastifyInstance, guards: Guards, bus: Bus, config: ExchangeConfig): void {
  const transport = new JsonRpcTransportHandler(new ExchangeRequestHandler(bus, config, guards.keys));
  app.post('/a2a/agents/:providerAgentId', { errorHandler: refusalAnswerer(new URL(config.PUBLIC_BASE_URL).host) }, async (req, reply) => {
    const principal = await guards.auth.authenticate(req.headers.authorization, req.id, req.ip);
    const method = (req.body as { method?: unknown } | null)?.method;
    const decision = await guards.limiter.decide(typeof method === 'string' && READS.has(method) ? 'read' : 'write', principal.agentId);
    if (!decision.allowed) throw new RateLimitedError('Too many requests; retry later.', decision);
    reply.headers(decision.headers);
    const signed = verifiedSignature(req, principal, true, config)!;
    // D24.2: used once; a message sent again is signed anew (its messageId makes the repeat idempotent).
    await guards.signatures.use(signed.use, req.id, undefined);
    const signature = signed.view;
    const { providerAgentId } = req.params as { providerAgentId: string };
    if (!UUID.test(providerAgentId)) throw new AppError('VALIDATION_ERROR', '"/path/providerAgentId" must be a UUID.', { field: '/path/providerAgentId' });
    if (typeof method === 'string' && STREAMING.has(method)) {
      return reply.type(JSON_TYPE).send(rpcError(req, A2A_ERROR_CODE.UNSUPPORTED_OPERATION, `${method}: no streaming (capabilities.streaming is false); send SendMessage, then GetTask.`));
    }
    const call: A2aCall = { requestId: req.id, principal, signature, providerAgentId, bodyHash: createHash('sha256').update(req.rawBody ?? '').digest('hex') };
    const user = { isAuthenticated: true, userName: principal.agentId };
    const requestedVersion = req.headers['a2a-version'];
    const context = new ServerCallContext({ user, state: new Map([[A2A_CALL, call]]), ...(typeof requestedVersion === 'string' ? { requestedVersion } : {}) });
    // The card's interface is of A2A 1.0; a request without `A2A-Version` is of 0.3, as A2A (and its SDK's server) reads it.
    if (context.requestedVersion !== A2A_PROTOCOL_VERSION) {
      const refused = JsonRpcTransportHandler.mapToJSONRPCError(new JsonRpcVersionNotSupportedError({ message: `A2A version ${context.requestedVersion} is not supported here: send A2A-Version: ${A2A_PROTOCOL_VERSION}.` }));
      return reply.type(JSON_TYPE).send(rpcError(req, refused.code, refused.message, refused.data));
    }
    const answer = await transport.handle(req.body as Record<string, unknown>, context);
    return reply.type(JSON_TYPE).send(answer);
  });
}

function rpcError(req: FastifyRequest, code: number, message: string, data?: unknown[]) {
  const id = (req.body as { id?: unknown } | null | undefined)?.id;
  return { jsonrpc: '2.0', id: typeof id === 'string' || typeof id === 'number' ? id : null, error: { code, message, ...(data ? { data } : {}) } };
}

/**
 * A refusal before the JSON-RPC call is made (no key, no signature, rate limited, body not JSON):
 * its HTTP status as on REST routes, the body a JSON-RPC error; `data` carries the D1.4 code as a
 * google.rpc.ErrorInfo `reason`, as A2A writes its own errors, with the entry's details.
 */
const refusalAnswerer = (domain: string) => function answerRefusal(this: FastifyInstance, err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  const appErr = toAppError(err, req.log as unknown as Logger);
  if (err instanceof RateLimitedError) reply.headers(err.decision.headers);
  // Retry-After where D1.4 asks for it, as on the REST routes.
  reply.headers(errorResponse(appErr.status, appErr.entries, req.id).headers);
  const code = appErr.code === 'INVALID_JSON' ? A2A_ERROR_CODE.PARSE_ERROR : appErr.code === 'VALIDATION_ERROR' ? A2A_ERROR_CODE.INVALID_PARAMS : EXCHANGE_ERROR_CODE;
  const data = appErr.entries.map((e) => ({
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: e.code,
    domain,
    // ErrorInfo's metadata is a map of strings: a value that is not one is written as JSON, an absent one (null) left out.
    metadata: Object.fromEntries(Object.entries({ ...e.details, ...(e.field ? { field: e.field } : {}) })
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)])),
  }));
  return reply.code(appErr.status).type(JSON_TYPE).send(rpcError(req, code, `${appErr.code}: ${appErr.message}`, data));
};
