import { describe, expect } from 'vitest';
import { AGENT_ID, cliTest } from './cli-test.js';

const DOCUMENT = { '@context': ['https://www.w3.org/ns/did/v1'], id: 'did:web:exchange.example:agents:a', verificationMethod: [{ id: '#key-1', type: 'Ed25519VerificationKey2020' }] };

describe('did resolve', () => {
  cliTest('GETs the did:web document without credentials, and prints it as JSON', async ({ aex, exchange }) => {
    exchange.on('GET', `/agents/${AGENT_ID}/did.json`, { raw: JSON.stringify(DOCUMENT) });
    const r = await aex(['--url', exchange.url, 'did', 'resolve', AGENT_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path, q.headers.authorization, q.headers['x-ae-signature']])).toEqual([['GET', `/agents/${AGENT_ID}/did.json`, undefined, undefined]]);
    expect(r.stdout).toBe(`${JSON.stringify(DOCUMENT, null, 2)}\n`);
  });

  cliTest('asks the profile\'s exchange when no URL is given', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/agents/${AGENT_ID}/did.json`, { raw: JSON.stringify(DOCUMENT) });
    expect((await aex(['did', 'resolve', AGENT_ID])).code).toBe(0);
    expect(exchange.requests).toHaveLength(1);
  });

  cliTest('takes the exchange from AEX_URL', async ({ aex, exchange }) => {
    exchange.on('GET', `/agents/${AGENT_ID}/did.json`, { raw: JSON.stringify(DOCUMENT) });
    expect((await aex(['did', 'resolve', AGENT_ID], { env: { AEX_URL: exchange.url } })).code).toBe(0);
    expect(exchange.requests).toHaveLength(1);
  });
});
