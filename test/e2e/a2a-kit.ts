import { createHash, randomUUID } from 'node:crypto';
import { AgentCard, Message, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { httpbis } from 'http-message-signatures';
import { signRequest, type SigningKeyPair } from '@agent-exchange/client';
import type { Member, TestExchange } from './harness.js';
import { keyIdOf, signerOf } from './rfc9421-kit.js';

// D21.2 from the buyer's side: the A2A SDK's own client, reading the provider's card and calling
// its JSON-RPC interface through a fetch that adds what the exchange asks of every agent route —
// the bearer API key and the request's signature, made by a stock RFC 9421 library (D20; or D3's
// X-AE headers) — and sends the card's public URLs to the test's gateway.

/** How a buyer's fetch authenticates: a member's key and signing key, or less (to be refused). */
export interface Credentials {
  apiKey?: string;
  signer?: { agentId: string; keys: SigningKeyPair; scheme: 'rfc9421' | 'x-ae' };
}

export const credentialsOf = (m: Member, scheme: 'rfc9421' | 'x-ae' = 'rfc9421'): Credentials => ({ apiKey: m.apiKey, signer: { agentId: m.agentId, keys: m.keys!, scheme } });

/**
 * A fetch for the SDK: `Authorization`, and each request signed — RFC 9421 over `@method`,
 * `@target-uri` (the card's public URL) and `content-digest`, or the X-AE headers — then sent to the
 * test's gateway.
 */
export function exchangeFetch(ex: TestExchange, who: Credentials): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const target = url.pathname + url.search;
    const method = init?.method ?? 'GET';
    const body = typeof init?.body === 'string' ? init.body : '';
    let headers: Record<string, string> = Object.fromEntries(new Headers(init?.headers).entries());
    if (who.apiKey) headers.authorization = `Bearer ${who.apiKey}`;
    const signer = who.signer;
    if (signer?.scheme === 'x-ae') headers = { ...headers, ...signRequest(signer.keys.secretKey, { method, target, body }) };
    if (signer?.scheme === 'rfc9421') {
      headers['content-digest'] = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
      const signed = await httpbis.signMessage(
        // A nonce makes each signature new: `created` counts seconds, and a signature is used once (D24.2).
        { key: signerOf(signer.keys, await keyIdOf(ex.url, signer.agentId)), fields: ['@method', '@target-uri', 'content-digest'], params: ['keyid', 'alg', 'created', 'expires', 'nonce'], paramValues: { created: new Date(), nonce: randomUUID() } },
        { method, url: url.href, headers },
      );
      headers = signed.headers as Record<string, string>;
    }
    return fetch(new URL(target, ex.url), { ...init, method, headers });
  };
}

/** The provider's card as the gateway serves it. */
export async function providerCard(ex: TestExchange, providerAgentId: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${ex.url}/agents/${providerAgentId}/agent-card.json`);
  if (res.status !== 200) throw new Error(`card of ${providerAgentId}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

/** The SDK's client of a provider agent, made from its card, calling as `who`. */
export async function a2aClient(ex: TestExchange, providerAgentId: string, who: Credentials): Promise<Client> {
  const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: exchangeFetch(ex, who) })] });
  return factory.createFromAgentCard(AgentCard.fromJSON(await providerCard(ex, providerAgentId)));
}

/** A user message whose data part is `data`, as A2A's JSON form writes it; on a task when `taskId` is given. */
export function dataMessage(data: unknown, taskId?: string, messageId: string = randomUUID()): Message {
  return Message.fromJSON({ messageId, role: 'ROLE_USER', parts: [{ data, mediaType: 'application/json' }], ...(taskId ? { taskId } : {}) });
}

/** SendMessage that must answer a task. */
export async function send(client: Client, data: unknown, taskId?: string): Promise<Task> {
  const result = await client.sendMessage({ tenant: '', message: dataMessage(data, taskId), configuration: undefined, metadata: undefined });
  if (!('status' in result)) throw new Error('SendMessage answered a message, not a task');
  return result;
}

export const stateOf = (t: Task) => TaskState[t.status!.state];

/** Reads the task until its state is `state`; throws with the last state after `ms`. */
export async function waitForState(client: Client, id: string, state: TaskState, ms = 10_000): Promise<Task> {
  const deadline = Date.now() + ms;
  for (;;) {
    const t = await client.getTask({ tenant: '', id, historyLength: undefined });
    if (t.status?.state === state) return t;
    if (Date.now() > deadline) throw new Error(`task ${id} is ${stateOf(t)}, not ${TaskState[state]}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The JSON-RPC error a call was refused with, as the SDK's client raised it. */
export async function refusal(call: Promise<unknown>): Promise<{ code: number; message: string; data?: Array<{ reason?: string }> }> {
  try {
    await call;
  } catch (err) {
    const e = err as { envelopeCode?: number; message: string; errorResponse?: { error: { code: number; message: string; data?: Array<{ reason?: string }> } }; data?: Array<{ reason?: string }> };
    if (e.errorResponse) return e.errorResponse.error;
    return { code: e.envelopeCode ?? NaN, message: e.message, ...(e.data ? { data: e.data } : {}) };
  }
  throw new Error('expected the call to be refused');
}
