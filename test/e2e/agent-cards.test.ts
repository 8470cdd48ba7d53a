import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { unwrap } from '@agent-exchange/client';
import { signingMember, startTestExchange, type TestExchange } from './harness.js';
import { cardSignatureKid, jwks, verifyCard } from './card-verifier.js';

// A2A agent cards: the exchange's own at /.well-known/agent-card.json, and one per provider agent
// with its active services as skills, each checked against the A2A SDK's types by its own codec
// (a card that decodes and encodes back to itself uses only the fields A2A defines, in their shapes)
// and read by the SDK's card resolver. Each is signed with the exchange's receipt key (D21.1), and
// checked here as a stock verifier checks it: `jose` and an RFC 8785 library, with the JWK set alone.

let ex: TestExchange;
beforeAll(async () => {
  ex = await startTestExchange();
});
afterAll(async () => {
  await ex.stop();
});

async function card(path: string): Promise<{ status: number; body: Record<string, unknown>; type: string | null }> {
  const res = await fetch(ex.url + path);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, type: res.headers.get('content-type') };
}

/**
 * Decoded by the A2A SDK's AgentCard codec and encoded back, the card is unchanged — but for an
 * empty `skills`, which the card keeps (A2A requires the field) and the codec's JSON form leaves out.
 */
function expectA2aCard(body: Record<string, unknown>) {
  const decoded = AgentCard.fromJSON(body);
  expect(AgentCard.toJSON(decoded)).toEqual((body.skills as unknown[]).length === 0 ? { ...body, skills: undefined } : body);
  return decoded;
}

const SERVICE = {
  name: 'Sentiment scorer',
  description: 'Scores the sentiment of a sentence from -1 to 1.',
  version: '2.1.0',
  category: 'text',
  subcategory: 'sentiment',
  tags: ['nlp'],
  inputSchema: { type: 'object', properties: { sentence: { type: 'string' } }, required: ['sentence'] },
  outputSchema: { type: 'object', properties: { score: { type: 'number' } }, required: ['score'] },
  examples: [{ input: { sentence: 'I love it' }, output: { score: 0.9 }, description: 'a happy sentence' }],
  pricing: { model: 'fixed', basePriceCents: 40 },
  sla: { maxLatencyMs: 2000, timeoutMs: 10_000 },
};

describe('the exchange\'s agent card', () => {
  it('describes the exchange, how to authenticate, and links the OpenAPI document and the MCP server', async () => {
    const { status, body, type } = await card('/.well-known/agent-card.json');
    expect(status).toBe(200);
    expect(type).toMatch(/^application\/json/);
    const decoded = expectA2aCard(body);
    expect(decoded.name).toBe('Agent Exchange');
    expect(decoded.skills.map((s) => s.id)).toEqual(['discover-services', 'buy-service', 'sell-service', 'negotiate', 'dispute']);
    expect(decoded.securitySchemes.apiKey?.scheme).toEqual({ $case: 'httpAuthSecurityScheme', value: expect.objectContaining({ scheme: 'Bearer' }) });
    const params = decoded.capabilities!.extensions[0]!.params!;
    expect(params.openApiUrl).toBe('http://exchange.test:8080/v1/openapi.json');
    expect(params.a2aUrlTemplate).toBe('http://exchange.test:8080/a2a/agents/{agentId}');
    expect(params.mcp).toMatchObject({ package: '@agent-exchange/mcp', command: 'agent-exchange-mcp' });
    // What it links is served.
    expect((await fetch(`${ex.url}/v1/openapi.json`)).status).toBe(200);
    expect((await fetch(`${ex.url}/docs/agent-tools.md`)).status).toBe(200);
  });

  it('is what the A2A SDK\'s resolver reads from the well-known path', async () => {
    const resolved = await new DefaultAgentCardResolver().resolve(ex.url);
    expect(resolved.name).toBe('Agent Exchange');
    expect(resolved.supportedInterfaces[0]!.url).toBe('http://exchange.test:8080/v1');
  });
});

describe('a provider agent\'s card', () => {
  it('publishes each active service as a skill, its contract in the extension, and follows the services as they change', async () => {
    const provider = await signingMember(ex.anon, 'sentiment-provider');
    const path = `/agents/${provider.id}/agent-card.json`;
    // An agent with nothing for sale has a card with no skill.
    expect(expectA2aCard((await card(path)).body).skills).toEqual([]);

    const service = unwrap(await provider.client.createService(SERVICE));
    const first = await card(path);
    expect(first.status).toBe(200);
    let decoded = expectA2aCard(first.body);
    expect(decoded.name).toBe('sentiment-provider');
    expect(decoded.skills).toEqual([expect.objectContaining({ id: service.id, name: 'Sentiment scorer', tags: ['text', 'sentiment', 'nlp'], examples: ['a happy sentence'] })]);
    const contracts = decoded.capabilities!.extensions[0]!.params!.contracts as Record<string, { inputSchema: unknown; pricing: { basePriceCents: number }; sla: { maxLatencyMs: number }; version: string }>;
    expect(contracts[service.id]).toMatchObject({ inputSchema: SERVICE.inputSchema, pricing: { basePriceCents: 40 }, sla: { maxLatencyMs: 2000 }, version: '2.1.0' });
    const resolved = await new DefaultAgentCardResolver().resolve(ex.url, path);
    expect(resolved.skills.map((s) => s.id)).toEqual([service.id]);

    // Paused: gone from the card; a new service: there; resumed: back.
    unwrap(await provider.client.updateService(service.id, { status: 'paused' }));
    expect(expectA2aCard((await card(path)).body).skills).toEqual([]);
    const second = unwrap(await provider.client.createService({ ...SERVICE, name: 'Sentence splitter', description: 'Splits a text into its sentences.' }));
    unwrap(await provider.client.updateService(service.id, { status: 'active' }));
    decoded = expectA2aCard((await card(path)).body);
    expect(decoded.skills.map((s) => s.id).sort()).toEqual([service.id, second.id].sort());
    expect(decoded.description).toMatch(/2 services/);

    // A deactivated agent has no card.
    unwrap(await ex.admin.suspendAgent(provider.id));
    expect((await card(path)).status).toBe(404);
  });

  it('answers an unknown agent 404 and a malformed id 400, in the envelope', async () => {
    const unknown = await card('/agents/00000000-0000-4000-8000-000000000000/agent-card.json');
    expect(unknown).toMatchObject({ status: 404, body: { data: null, errors: [{ code: 'NOT_FOUND' }] } });
    const bad = await card('/agents/not-a-uuid/agent-card.json');
    expect(bad).toMatchObject({ status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', field: '/path/agentId' }] } });
  });
});

/** The card at `path` once signed by the key `kid`, or as it is after 15 s. */
async function signedWith(path: string, kid: string): Promise<Record<string, unknown>> {
  let body = (await card(path)).body;
  for (const deadline = Date.now() + 15_000; cardSignatureKid(body) !== kid && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 250));
    body = (await card(path)).body;
  }
  return body;
}

describe('the cards\' signatures (D21.1)', () => {
  it('sign the exchange\'s card with the current receipt key, over its RFC 8785 form without signatures; a tampered card fails', async () => {
    const { body } = await card('/.well-known/agent-card.json');
    const keys = await jwks(ex.url);
    // A key of the set: the current one, or — for the few seconds a signature is reused — one just retired (D18.4).
    expect(keys.keys.map((k) => k.kid)).toContain(cardSignatureKid(body));
    await expect(verifyCard(body, keys)).resolves.toMatchObject({ alg: 'EdDSA', typ: 'JOSE', jku: 'http://exchange.test:8080/.well-known/jwks.json' });
    await expect(verifyCard({ ...body, name: 'Agent Exchange (evil twin)' }, keys)).rejects.toThrow(/signature verification failed/);
    const interfaces = structuredClone(body.supportedInterfaces) as Array<{ url: string }>;
    interfaces[0]!.url = 'https://attacker.example/v1';
    await expect(verifyCard({ ...body, supportedInterfaces: interfaces }, keys)).rejects.toThrow(/signature verification failed/);
  });

  it('are accepted by the A2A SDK\'s own verifier, on the cards its resolver reads; a tampered card is not', async () => {
    const keys = await jwks(ex.url);
    const verifier = verifyAgentCardSignature(async (kid) => keys.keys.find((k) => k.kid === kid)!);
    const provider = await signingMember(ex.anon, 'sdk-verified');
    unwrap(await provider.client.createService(SERVICE));
    for (const path of ['/.well-known/agent-card.json', `/agents/${provider.id}/agent-card.json`]) {
      const resolved = await new DefaultAgentCardResolver().resolve(ex.url, path);
      expect(resolved.signatures.length).toBeGreaterThan(0);
      await expect(verifier(resolved)).resolves.toBeUndefined();
      await expect(verifier({ ...resolved, description: 'something else' })).rejects.toThrow(/No valid signatures/);
    }
  });

  it('sign each provider\'s card as its services change, and with the new key once the receipt key is rotated; the card signed before keeps verifying', async () => {
    const provider = await signingMember(ex.anon, 'signed-provider');
    const path = `/agents/${provider.id}/agent-card.json`;
    const empty = (await card(path)).body;
    await verifyCard(empty, await jwks(ex.url));
    unwrap(await provider.client.createService(SERVICE));
    const before = (await card(path)).body;
    expect((before.skills as unknown[]).length).toBe(1);
    await verifyCard(before, await jwks(ex.url));
    // A card's signature does not carry over to another card.
    await expect(verifyCard({ ...before, signatures: empty.signatures }, await jwks(ex.url))).rejects.toThrow(/signature verification failed/);

    const rotated = unwrap(await ex.admin.rotateReceiptKey());
    expect(cardSignatureKid(before)).not.toBe(rotated.current);
    // The gateway serves a signature from memory for a few seconds (card-signatures.ts): polled until the new key signs.
    const after = await signedWith(path, rotated.current);
    expect(cardSignatureKid(after)).toBe(rotated.current);
    const keys = await jwks(ex.url);
    await verifyCard(after, keys);
    await verifyCard(before, keys);
    expect(cardSignatureKid(await signedWith('/.well-known/agent-card.json', rotated.current))).toBe(rotated.current);
  });
});
