import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Principal } from '@aex/contracts';
import { operationKeyOf, outcomeUnknownHeaders } from '../src/http/operation-keys.js';
import { routes } from '../src/http/routes.js';

// Every write carries an operation key to the owner (D5, docs/idempotency.md); a 202 of unknown outcome says
// which key to repeat with, and where the resource can be read.

const route = (method: string, url: string) => routes.find((r) => r.method === method && r.url === url)!;
const request = (method: string, url: string, headers: Record<string, string> = {}, params: Record<string, string> = {}) =>
  ({ method, url, headers, params, rawBody: Buffer.from('{}'), ip: '10.0.0.1' }) as unknown as FastifyRequest;
const caller = { agentId: 'a1' } as Principal;
const txId = '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a';

describe('operation keys', () => {
  it('a write sent with an Idempotency-Key carries it in the agent\'s scope; one sent without carries a key the gateway made, in the operation scope', () => {
    const own = operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions', { 'idempotency-key': 'mine' }), caller)!;
    expect(own).toMatchObject({ ctx: { key: 'mine', scope: 'agent:a1' }, made: false });
    expect(own.ctx.firstCopy).toBeUndefined();
    const made = operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions'), caller)!;
    expect(made).toMatchObject({ ctx: { scope: 'operation:agent:a1', fingerprint: own.ctx.fingerprint, firstCopy: true }, made: true });
    expect(made.ctx.key).toMatch(/^aex-op-[0-9a-f-]{36}$/);
    // Each write its own key.
    expect(operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions'), caller)!.ctx.key).not.toBe(made.ctx.key);
  });

  it('a made key the client repeats is in the operation scope, with no first-copy mark (the repeat claims it)', () => {
    const repeated = operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions', { 'idempotency-key': 'aex-op-1b4e28ba-2fa1-11d2-883f-0016d3cca427' }), caller)!;
    expect(repeated).toMatchObject({ ctx: { key: 'aex-op-1b4e28ba-2fa1-11d2-883f-0016d3cca427', scope: 'operation:agent:a1' }, made: false });
    expect(repeated.ctx.firstCopy).toBeUndefined();
  });

  it('sign-up\'s made key is scoped to the route and the client\'s address', () => {
    const made = operationKeyOf(route('POST', '/v1/accounts'), request('POST', '/v1/accounts'), null)!;
    expect(made.ctx.scope).toBe('operation:anonymous:POST /v1/accounts:10.0.0.1');
  });

  it('a read carries none', () => {
    expect(operationKeyOf(route('GET', '/v1/transactions'), request('GET', '/v1/transactions'), caller)).toBeUndefined();
  });
});

describe('D5.4: the 202 of an unknown outcome', () => {
  it('gives the key to repeat with, Retry-After, and the resource a write on one acts on', () => {
    const spec = route('POST', '/v1/transactions/:transactionId/deliver');
    const key = operationKeyOf(spec, request('POST', `/v1/transactions/${txId}/deliver`, { 'idempotency-key': 'k1' }), caller)!;
    const headers = outcomeUnknownHeaders(spec, request('POST', `/v1/transactions/${txId}/deliver`, {}, { transactionId: txId }), key);
    expect(headers).toEqual({ 'idempotency-key': key.ctx.key, 'retry-after': '1', location: `/v1/transactions/${txId}` });
  });

  it('gives no Location for a creation, whose resource is learned by repeating with the key', () => {
    const spec = route('POST', '/v1/transactions');
    const key = operationKeyOf(spec, request('POST', '/v1/transactions', { 'idempotency-key': 'k2' }), caller)!;
    expect(outcomeUnknownHeaders(spec, request('POST', '/v1/transactions'), key)).toEqual({ 'idempotency-key': key.ctx.key, 'retry-after': '1' });
  });

  it('a write sent without a key is given back the key the gateway made, to repeat it with', () => {
    const spec = route('POST', '/v1/transactions/:transactionId/deliver');
    const made = operationKeyOf(spec, request('POST', `/v1/transactions/${txId}/deliver`), caller)!;
    expect(outcomeUnknownHeaders(spec, request('POST', `/v1/transactions/${txId}/deliver`, {}, { transactionId: txId }), made))
      .toEqual({ 'idempotency-key': made.ctx.key, 'retry-after': '1', location: `/v1/transactions/${txId}` });
  });
});
