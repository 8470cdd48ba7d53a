import { describe, expect } from 'vitest';
import { ACCOUNT_ID, AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { agentView, PROVIDER_ID } from './views.js';

describe('delegation show', () => {
  cliTest('prints the agent\'s own rules', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView({ delegation: { maxTransactionCents: 1000, allowedCategories: ['text'] } }) });
    expect((await aex(['delegation', 'show'])).stdout).toBe('maxTransactionCents  1000\nallowedCategories    ["text"]\n');
  });

  cliTest('says the account\'s defaults apply when the agent has no rules of its own', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${PROVIDER_ID}`, { data: agentView({ id: PROVIDER_ID, delegation: null }) });
    expect((await aex(['delegation', 'show', PROVIDER_ID])).stdout).toBe('rules  none of its own (the account\'s defaults apply)\n');
  });
});

describe('delegation set', () => {
  cliTest('PUTs the rules given for this agent, categories split at commas, and sends no others', async ({ aex, exchange, profile }) => {
    exchange.on('PUT', `/v1/agents/${AGENT_ID}/delegation`, { data: { maxDailySpendCents: 900, blockedCategories: ['images', 'audio'] } });
    const r = await aex(['delegation', 'set', '--max-daily-spend-cents', '900', '--blocked-categories', 'images, audio,']);
    const [sent] = exchange.requests;
    expect([sent!.method, sent!.path, sent!.body, isSignedBy(sent!, profile.signingSecretKey)]).toEqual(['PUT', `/v1/agents/${AGENT_ID}/delegation`, { maxDailySpendCents: 900, blockedCategories: ['images', 'audio'] }, true]);
    expect(r.stdout).toBe('maxDailySpendCents  900\nblockedCategories   ["images","audio"]\n');
  });

  cliTest('names the approval rules as the exchange knows them', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PUT', `/v1/agents/${PROVIDER_ID}/delegation`, { data: {} });
    const r = await aex(['delegation', 'set', '--agent', PROVIDER_ID, '--require-approval-above-cents', '100', '--auto-approve-below', '50', '--max-transaction-cents', '0']);
    expect(exchange.requests[0]!.body).toEqual({ requireHumanApprovalAboveCents: 100, autoApproveBelow: 50, maxTransactionCents: 0 });
    expect(r.stdout).toBe('rules  none\n');
  });

  cliTest('--account sets the account\'s defaults', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PUT', `/v1/accounts/${ACCOUNT_ID}/delegation`, { data: { allowedCategories: ['text'] } });
    await aex(['delegation', 'set', '--account', '--allowed-categories', 'text']);
    expect(exchange.requests.map((q) => [q.method, q.path, q.body])).toEqual([['PUT', `/v1/accounts/${ACCOUNT_ID}/delegation`, { allowedCategories: ['text'] }]]);
  });

  cliTest('--account without the account in the profile asks the exchange for it first', async ({ aex, exchange }) => {
    exchange.on('GET', '/v1/agents/env-agent', { data: agentView({ id: 'env-agent' }) });
    exchange.on('PUT', `/v1/accounts/${ACCOUNT_ID}/delegation`, { data: {} });
    await aex(['delegation', 'set', '--account'], { env: { AEX_URL: exchange.url, AEX_AGENT_ID: 'env-agent', AEX_API_KEY: 'k' } });
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['GET', '/v1/agents/env-agent'], ['PUT', `/v1/accounts/${ACCOUNT_ID}/delegation`]]);
  });
});
