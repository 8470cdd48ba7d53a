import { describe, expect } from 'vitest';
import { generateSigningKey, publicKeyOf, signingString, verifySignature } from '@agent-exchange/client';
import { readProfiles, updateProfile } from '@aex/agent-kit';
import { AGENT_ID, API_KEY, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { agentView } from './views.js';

describe('keys generate', () => {
  cliTest('keeps a new key in the profile as pending, sending nothing', async ({ aex, exchange, configPath, profile }) => {
    const r = await aex(['keys', 'generate']);
    const saved = readProfiles(configPath).profiles.me!;
    expect(saved.signingSecretKey).toBe(profile.signingSecretKey);
    expect(r.stdout).toBe(`New signing key ${publicKeyOf(saved.pendingSigningSecretKey!)}\nRegister it with: aex keys register\n`);
    expect(exchange.requests).toEqual([]);
  });

  cliTest('needs a profile to keep the key in', async ({ aex }) => {
    const r = await aex(['keys', 'generate'], { env: { AEX_URL: 'http://127.0.0.1:1', AEX_AGENT_ID: 'a', AEX_API_KEY: 'k' } });
    expect([r.code, r.stderr]).toEqual([2, 'aex: Keys are kept in a profile: make one first with aex signup or aex login.\n']);
  });
});

describe('keys register', () => {
  cliTest('registers the pending key with a PATCH the registered key signs, then keeps it as the profile\'s key', async ({ aex, exchange, configPath, profile }) => {
    const next = generateSigningKey();
    updateProfile(configPath, 'me', { pendingSigningSecretKey: next.secretKey });
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
    exchange.on('PATCH', `/v1/agents/${AGENT_ID}`, { data: agentView({ signingKeyPublic: next.publicKey }) });
    const r = await aex(['keys', 'register']);
    const [patch] = exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`);
    expect(patch!.body).toEqual({ signingKeyPublic: next.publicKey, signingKeyProof: expect.any(String) });
    const message = signingString(String(patch!.headers['x-ae-signature-timestamp']), 'PATCH', patch!.target, patch!.raw);
    expect(verifySignature(publicKeyOf(profile.signingSecretKey), String(patch!.headers['x-ae-signature']), message)).toBe(true);
    expect(readProfiles(configPath).profiles.me).toEqual({ ...profile, signingSecretKey: next.secretKey });
    expect(r.stdout).toBe(`Registered signing key ${next.publicKey} for agent ${AGENT_ID}.\n`);
  });

  cliTest('with no key pending, registers the profile\'s own key, unsigned', async ({ aex, exchange, profile }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
    exchange.on('PATCH', `/v1/agents/${AGENT_ID}`, { data: agentView({ signingKeyPublic: publicKeyOf(profile.signingSecretKey) }) });
    await aex(['keys', 'register']);
    const [patch] = exchange.sent('PATCH', `/v1/agents/${AGENT_ID}`);
    expect([(patch!.body as { signingKeyPublic: string }).signingKeyPublic, patch!.headers['x-ae-signature']]).toEqual([publicKeyOf(profile.signingSecretKey), undefined]);
  });

  cliTest('with no key at all, says to generate one', async ({ aex, exchange, configPath, profile: _ }) => {
    updateProfile(configPath, 'me', { signingSecretKey: undefined });
    const r = await aex(['keys', 'register']);
    expect([r.code, r.stderr]).toEqual([2, 'aex: No signing key to register: run aex keys generate first.\n']);
    expect(exchange.requests).toEqual([]);
  });
});

describe('keys rotate', () => {
  cliTest('asks for a new API key with a signed POST and an idempotency key, and saves it in the profile', async ({ aex, exchange, configPath, profile }) => {
    exchange.on('POST', `/v1/agents/${AGENT_ID}/keys/rotate`, { data: { apiKey: 'ae_live_rotated_key', keyPrefix: 'ae_live_rota' } });
    const r = await aex(['keys', 'rotate']);
    const [sent] = exchange.requests;
    expect([sent!.method, sent!.path, sent!.headers.authorization, isSignedBy(sent!, profile.signingSecretKey)]).toEqual(['POST', `/v1/agents/${AGENT_ID}/keys/rotate`, `Bearer ${API_KEY}`, true]);
    expect(sent!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(readProfiles(configPath).profiles.me!.apiKey).toBe('ae_live_rotated_key');
    expect(r.stdout).toBe('New API key ae_live_rota… saved in the profile.\n');
  });

  cliTest('without a profile, says the new key was issued but not saved', async ({ aex, exchange }) => {
    exchange.on('POST', '/v1/agents/env-agent/keys/rotate', { data: { apiKey: 'ae_live_rotated_key', keyPrefix: 'ae_live_rota' } });
    const r = await aex(['keys', 'rotate'], { env: { AEX_URL: exchange.url, AEX_AGENT_ID: 'env-agent', AEX_API_KEY: 'k' } });
    expect(r.stdout).toBe('New API key ae_live_rota… not saved (no profile): it was issued, and the old key is revoked.\n');
  });
});
