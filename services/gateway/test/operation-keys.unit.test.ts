import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Principal } from '@aex/contracts';
import { operationKeyOf, outcomeUnknownHeaders } from '../src/http/operation-keys.js';
import { routes } from '../src/http/routes.js';

// A keyed write carries its key to the owner (D5, docs/idempotency.md); a 202 of unknown outcome says
// which key to repeat with, and where the resource can be read.

const route = (method: string, url: string) => routes.find((r) => r.method === method && r.url === url)!;
const request = (method: string, url: string, headers: Record<string, string> = {}, params: Record<string, string> = {}) =>
  ({ method, url, headers, params, rawBody: Buffer.from('{}'), ip: '10.0.0.1' }) as unknown as FastifyRequest;
const caller = { agentId: 'a1' } as Principal;
const txId = '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a';

describe('operation keys', () => {
  it('a write sent with an Idempotency-Key carries it in the agent\'s scope; one sent without carries none', () => {
    const own = operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions', { 'idempotency-key': 'mine' }), caller)!;
    expect(own).toMatchObject({ ctx: { key: 'mine', scope: 'agent:a1' } });
    expect(operationKeyOf(route('POST', '/v1/transactions'), request('POST', '/v1/transactions'), caller)).toBeUndefined();
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

  it('D9.9: for a write sent without a key, gives only where the resource can be read: no key and no Retry-After, for it must not be sent again blindly', () => {
    const spec = route('POST', '/v1/transactions/:transactionId/deliver');
    expect(outcomeUnknownHeaders(spec, request('POST', `/v1/transactions/${txId}/deliver`, {}, { transactionId: txId }), undefined)).toEqual({ location: `/v1/transactions/${txId}` });
    expect(outcomeUnknownHeaders(route('POST', '/v1/transactions'), request('POST', '/v1/transactions'), undefined)).toEqual({});
  });
});
