import { createHash, randomUUID } from 'node:crypto';
import type { AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksResponse, Message, SendMessageRequest, StreamResponse, Task, TaskPushNotificationConfig } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, JsonRpcExtendedAgentCardNotConfiguredError, JsonRpcPushNotificationNotSupportedError, JsonRpcRequestMalformedError, JsonRpcTaskNotCancelableError, JsonRpcTaskNotFoundError, JsonRpcTransportError, JsonRpcUnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { catalogOps, CreateTransactionBody, isAppError, transactionOps, validator, VerifyBody, type ErrorEntry, type IdempotencyContext, type Operation, type OpOutput, type Principal, type RequestSignature } from '@aex/contracts';
import { callOperation, operationScope, type Bus, type ExchangeConfig } from '@aex/platform';
import type { IdempotencyKeyBinding } from '../guards/idempotency-keys.js';
import { MADE_KEY_PREFIX } from '../http/operation-keys.js';
import { UUID } from '../http/input-hygiene.js';
import { A2A_METADATA_KEY, taskOf } from './task-view.js';

/** What the endpoint knows of a call once it is authenticated and signed: kept in the SDK's call context. */
export interface A2aCall {
  requestId: string;
  principal: Principal;
  signature: RequestSignature;
  /** The provider agent whose endpoint was called (D21.2): its services only are bought there. */
  providerAgentId: string;
  /** SHA-256 of the request's bytes: the fingerprint of the operation keys of its writes (D5). */
  bodyHash: string;
}

/**
 * A write's key (D5): a message's own, from its `messageId` — A2A's retry of a message sends the
 * same id, which buys once — or, for a call without one (CancelTask), a key the gateway makes.
 */
type WriteKey = { messageId: string; fingerprint: string } | 'made';

export const A2A_CALL = 'aex.call';
const callOf = (context: ServerCallContext): A2aCall => context.state.get(A2A_CALL) as A2aCall;

const PURCHASE = validator(CreateTransactionBody);
const VERIFY = validator(VerifyBody);
/** The JSON-RPC code of a refusal by the exchange that A2A has no code for; its D1.4 code leads the message. */
export const EXCHANGE_ERROR_CODE = -32000;
const SHAPE = '{ serviceId, input, maxPriceCents?, units?, maxUnits?, sessionId?, queryId? }';

const invalidParams = (message: string) => new JsonRpcRequestMalformedError({ message, envelopeCode: A2A_ERROR_CODE.INVALID_PARAMS });
const taskNotFound = (id: string) => new JsonRpcTaskNotFoundError({ message: `No task ${id} of this agent that the caller may see.` });
/** The entries' messages, each after the field it is about (a REST body's pointer names the message's data part). */
const describe = (errors: ErrorEntry[]) => errors.map((e) => (e.field ? `${e.field.replace(/^\/body/, '/message/data')}: ${e.message}` : e.message)).join('; ');
/** D1.4 codes that say the parameters were wrong: JSON-RPC's invalid params. */
const PARAMS_CODES = new Set(['VALIDATION_ERROR', 'SCHEMA_VALIDATION_FAILED']);

/** An answer of the exchange that is not a success, as a JSON-RPC error: its D1.4 code leads the message. */
function refusal(errors: ErrorEntry[]): Error {
  const code = errors[0]?.code ?? 'INTERNAL_ERROR';
  const message = `${code}: ${describe(errors)}`;
  if (PARAMS_CODES.has(code)) return invalidParams(message);
  return new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: EXCHANGE_ERROR_CODE, message } });
}

/**
 * D21.2: the A2A request handler of a provider agent's JSON-RPC endpoint, for the SDK's
 * `JsonRpcTransportHandler`. Each A2A method is an operation of the exchange called with the
 * caller's principal and verified signature, as the REST routes call it: a buying message creates a
 * transaction (the task id is its id), getting a task reads it, cancelling cancels it, a
 * `{ verify: true }` message on a task verifies it. Nothing is kept here: the transaction is the task.
 */
export class ExchangeRequestHandler implements A2ARequestHandler {
  constructor(private readonly bus: Bus, private readonly config: ExchangeConfig, private readonly keys: IdempotencyKeyBinding) {}

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const call = callOf(context);
    const message = params.message;
    if (!message) throw invalidParams('params.message is required.');
    const data = dataOf(message);
    if (message.taskId) return this.onTask(call, message, data);
    return this.buy(call, message, data);
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return taskOf(await this.transactionOfTask(callOf(context), params.id), this.config.PUBLIC_BASE_URL);
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const call = callOf(context);
    const tx = await this.transactionOfTask(call, params.id);
    const answer = await this.call(call, transactionOps.cancel, { transactionId: tx.id }, {}, 'made');
    if (!answer.ok) {
      if (answer.errors[0]?.code === 'INVALID_STATE') throw new JsonRpcTaskNotCancelableError({ message: `${describe(answer.errors)} (status ${tx.status})` });
      throw refusal(answer.errors);
    }
    return taskOf(answer.data, this.config.PUBLIC_BASE_URL);
  }

  /** A purchase: the data part checked as POST /v1/transactions checks its body, for a service of this provider. */
  private async buy(call: A2aCall, message: Message, data: Record<string, unknown>): Promise<Task> {
    const checked = PURCHASE.check(data, '/message/data');
    if (!checked.ok) throw invalidParams(`The data part is not a purchase ${SHAPE}: ${describe(checked.errors)}`);
    await this.requireProvidersOwn(call, checked.value);
    const contextId = message.contextId || randomUUID();
    const body = { ...checked.value, metadata: { ...checked.value.metadata, [A2A_METADATA_KEY]: { contextId, messageId: message.messageId } } };
    const answer = await this.call(call, transactionOps.createTransaction, {}, body, messageKey(message, call, checked.value));
    if (!answer.ok) throw refusal(answer.errors);
    return taskOf(answer.data, this.config.PUBLIC_BASE_URL);
  }

  /** A message on a task: a verification `{ verify: true, qualityScore?, notes? }` (D21.2, D9.7). */
  private async onTask(call: A2aCall, message: Message, data: Record<string, unknown>): Promise<Task> {
    const taskId = message.taskId;
    const tx = await this.transactionOfTask(call, taskId);
    const { verify, ...rest } = data;
    if (verify !== true) throw invalidParams('A message on a task verifies its delivery: its data part is { verify: true, qualityScore?, notes? }.');
    const checked = VERIFY.check(rest, '/message/data');
    if (!checked.ok) throw invalidParams(describe(checked.errors));
    const answer = await this.call(call, transactionOps.verify, { transactionId: tx.id }, checked.value, messageKey(message, call, data));
    if (!answer.ok) throw refusal(answer.errors);
    return taskOf(answer.data, this.config.PUBLIC_BASE_URL);
  }

  /** The service (or the session's service) is this endpoint's provider's; otherwise a clear refusal. */
  private async requireProvidersOwn(call: A2aCall, body: CreateTransactionBody): Promise<void> {
    const provider = call.providerAgentId;
    if (body.serviceId) {
      const service = await this.call(call, catalogOps.getService, { serviceId: body.serviceId }, {}, null);
      if (!service.ok) throw invalidParams(`No service ${body.serviceId}: ${describe(service.errors)}`);
      if (service.data.agentId !== provider) {
        throw invalidParams(`Service ${body.serviceId} is not sold by agent ${provider}: buy it at ${this.config.PUBLIC_BASE_URL}/a2a/agents/${service.data.agentId}.`);
      }
      return;
    }
    if (body.sessionId) {
      const session = await this.call(call, transactionOps.getSession, { sessionId: body.sessionId }, {}, null);
      if (!session.ok) throw invalidParams(`No session ${body.sessionId} of the caller: ${describe(session.errors)}`);
      if (session.data.providerAgentId !== provider) throw invalidParams(`Session ${body.sessionId} buys from agent ${session.data.providerAgentId}, not from agent ${provider}.`);
      return;
    }
    throw invalidParams(`The data part names no serviceId (nor a sessionId): ${SHAPE}.`);
  }

  /** The transaction of a task this caller may see at this provider's endpoint; otherwise task not found. */
  private async transactionOfTask(call: A2aCall, taskId: string): Promise<OpOutput<typeof transactionOps.getTransaction>> {
    if (!UUID.test(taskId)) throw taskNotFound(taskId);
    const answer = await this.call(call, transactionOps.getTransaction, { transactionId: taskId }, {}, null);
    if (!answer.ok) {
      if (answer.status === 404) throw taskNotFound(taskId);
      throw refusal(answer.errors);
    }
    if (answer.data.providerAgentId !== call.providerAgentId) throw taskNotFound(taskId);
    return answer.data;
  }

  /**
   * The operation with the caller's principal and signature (D3, D20), as `pipeline.ts` calls it. A
   * write carries an operation key (D5): a message's, bound first like a client's Idempotency-Key
   * (D5.6) so that the same messageId with another message is refused, or one the gateway makes.
   */
  private async call<O extends Operation>(call: A2aCall, op: O, path: Record<string, string>, body: unknown, write: WriteKey | null) {
    const scope = `agent:${call.principal.agentId}`;
    let idempotency: IdempotencyContext | undefined;
    if (write === 'made') {
      const fingerprint = createHash('sha256').update(`POST\n/a2a/agents/${call.providerAgentId}\n${call.bodyHash}\n${op.name}`).digest('hex');
      idempotency = { key: `${MADE_KEY_PREFIX}${randomUUID()}`, scope: operationScope(scope), fingerprint, firstCopy: true };
    } else if (write) {
      idempotency = { key: `a2a-message-${createHash('sha256').update(write.messageId).digest('base64url')}`, scope, fingerprint: write.fingerprint };
    }
    try {
      if (idempotency && write !== 'made') await this.keys.bind(idempotency);
      return await callOperation(this.bus, op, {
        ctx: { requestId: call.requestId, principal: call.principal, admin: false, signed: true, signature: call.signature, ...(idempotency ? { idempotency } : {}) },
        input: { path, query: {}, body },
      }, { timeoutMs: this.config.RPC_TIMEOUT_MS });
    } catch (err) {
      if (!isAppError(err)) throw err;
      if (err.code === 'IDEMPOTENCY_KEY_REUSED') throw invalidParams(`messageId was already sent with another message; a new message needs a new messageId.`);
      throw refusal(err.entries);
    }
  }

  // What this endpoint does not offer: streaming, push configurations, task lists, an extended card.

  getAgentCard(): Promise<AgentCard> {
    return Promise.reject(new JsonRpcUnsupportedOperationError({ message: 'The agent card is at /agents/{id}/agent-card.json.' }));
  }
  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.reject(new JsonRpcExtendedAgentCardNotConfiguredError({ message: 'No extended agent card: the public card says everything.' }));
  }
  // eslint-disable-next-line require-yield
  async *sendMessageStream(): AsyncGenerator<StreamResponse, void, undefined> {
    throw new JsonRpcUnsupportedOperationError({ message: 'No streaming (capabilities.streaming is false): send SendMessage, then GetTask.' });
  }
  // eslint-disable-next-line require-yield
  async *resubscribe(): AsyncGenerator<StreamResponse, void, undefined> {
    throw new JsonRpcUnsupportedOperationError({ message: 'No streaming (capabilities.streaming is false): poll GetTask.' });
  }
  listTasks(): Promise<ListTasksResponse> {
    return Promise.reject(new JsonRpcUnsupportedOperationError({ message: 'ListTasks is not offered: GET /v1/transactions lists the caller\'s purchases.' }));
  }
  createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(pushNotSupported());
  }
  getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return Promise.reject(pushNotSupported());
  }
  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(pushNotSupported());
  }
  deleteTaskPushNotificationConfig(): Promise<void> {
    return Promise.reject(pushNotSupported());
  }
}

/** The key of a message's write: its messageId, bound to what it asks of which provider's endpoint. */
function messageKey(message: Message, call: A2aCall, what: unknown): WriteKey {
  if (!message.messageId) throw invalidParams('params.message.messageId is required.');
  const fingerprint = createHash('sha256').update(`A2A SendMessage\n${call.providerAgentId}\n${message.taskId}\n${JSON.stringify(what)}`).digest('hex');
  return { messageId: message.messageId, fingerprint };
}

const pushNotSupported = () => new JsonRpcPushNotificationNotSupportedError({ message: 'No A2A push notifications: the exchange\'s webhooks (D14) tell an agent of its purchases.' });

/** The message's data part, an object: what A2A's JSON-RPC binding carries of a purchase. */
function dataOf(message: Message): Record<string, unknown> {
  const part = message.parts.find((p) => p.content?.$case === 'data');
  const value: unknown = part?.content?.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidParams(`The message needs a data part holding an object: a purchase ${SHAPE}, or on a task { verify: true, qualityScore? }.`);
  }
  return value as Record<string, unknown>;
}
