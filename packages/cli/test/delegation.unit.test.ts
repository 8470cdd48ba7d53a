import { describe, expect } from 'vitest';
import { ACCOUNT_ID, AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { agentView, PROVIDER_ID } from './views.js';

describe('delegation show (D10.1, D6.8)', () => {
  const inForce = (change: Record<string, unknown> = {}) => ({ agentId: AGENT_ID, own: {}, inForce: {}, base: 'account', ...change });

  cliTest('D10.1: prints each rule\'s own value beside the one in force, as the exchange reads them', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}/delegation`, { data: inForce({
      own: { maxTransactionCents: 1000, allowedCategories: ['text', 'data'] },
      inForce: { maxTransactionCents: 1000, maxDailySpendCents: 5000, allowedCategories: ['text', 'data'] },
    }) });
    expect((await aex(['delegation', 'show'])).stdout).toBe([
      'RULE                 OWN        IN FORCE',
      'maxTransactionCents  1000       1000',
      'maxDailySpendCents   -          5000',
      'allowedCategories    text,data  text,data',
      'In force: what the exchange checks its purchases against — the account\'s defaults, each rule of its own replacing the default.',
      '',
    ].join('\n'));
  });

  cliTest('D6.8: says a child\'s rules in force are its parent\'s, tightened by its own', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${PROVIDER_ID}/delegation`, { data: inForce({ agentId: PROVIDER_ID, own: { maxDailySpendCents: 800 }, inForce: { maxDailySpendCents: 300 }, base: 'parent' }) });
    const out = (await aex(['delegation', 'show', PROVIDER_ID])).stdout;
    expect(out).toMatch(/^maxDailySpendCents {2}800 {2}300$/m);
    expect(out).toContain('its parent\'s rules in force, tightened by its own');
  });

  cliTest('D10.1: says so when no rule applies', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/agents/${PROVIDER_ID}/delegation`, { data: inForce({ agentId: PROVIDER_ID }) });
    expect((await aex(['delegation', 'show', '--agent', PROVIDER_ID])).stdout).toBe('No rules: nothing limits its purchases (no rule of its own, none from the account\'s defaults).\n');
  });

  cliTest('D10.1: --json prints the exchange\'s answer: its own rules, those in force and what they start from', async ({ aex, exchange, profile: _ }) => {
    const view = inForce({ own: { maxTransactionCents: 250 }, inForce: { maxTransactionCents: 250, autoApproveBelow: 100 } });
    exchange.on('GET', `/v1/agents/${AGENT_ID}/delegation`, { data: view });
    expect(JSON.parse((await aex(['--json', 'delegation', 'show'])).stdout)).toEqual(view);
  });

  cliTest('shows the account\'s defaults with --account', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}`, { data: { id: ACCOUNT_ID, defaultDelegation: { maxDailySpendCents: 5000 } } });
    expect((await aex(['delegation', 'show', '--account'])).stdout).toBe('maxDailySpendCents  5000\n');
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}`, { data: { id: ACCOUNT_ID, defaultDelegation: {} } });
    expect((await aex(['delegation', 'show', '--account'])).stdout).toBe('rules  none: the account has no default rules\n');
  });
});

describe('delegation set (D23.3)', () => {
  cliTest('PATCHes only the rules given for this agent, categories split at commas, and marks each rule new, changed or kept', async ({ aex, exchange, profile }) => {
    exchange.on('PATCH', `/v1/agents/${AGENT_ID}/delegation`, { data: {
      rules: { maxDailySpendCents: 900, blockedCategories: ['images', 'audio'], requireHumanApprovalAboveCents: 200 },
      changes: [{ field: 'maxDailySpendCents', from: 500, to: 900 }, { field: 'blockedCategories', from: null, to: ['images', 'audio'] }],
    } });
    const r = await aex(['delegation', 'set', '--max-daily-spend-cents', '900', '--blocked-categories', 'images, audio,']);
    const [sent] = exchange.requests;
    expect([sent!.method, sent!.path, sent!.body, isSignedBy(sent!, profile.signingSecretKey)]).toEqual(['PATCH', `/v1/agents/${AGENT_ID}/delegation`, { maxDailySpendCents: 900, blockedCategories: ['images', 'audio'] }, true]);
    expect(r.stdout).toBe([
      'Changed 2 rules; the others are kept.',
      'maxDailySpendCents              900 (was 500)',
      'blockedCategories               images,audio (new)',
      'requireHumanApprovalAboveCents  200 (kept)',
      '',
    ].join('\n'));
  });

  cliTest('names the approval rules as the exchange knows them', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/agents/${PROVIDER_ID}/delegation`, { data: { rules: {}, changes: [] } });
    const r = await aex(['delegation', 'set', '--agent', PROVIDER_ID, '--require-approval-above-cents', '100', '--auto-approve-below', '50', '--max-transaction-cents', '0']);
    expect(exchange.requests[0]!.body).toEqual({ requireHumanApprovalAboveCents: 100, autoApproveBelow: 50, maxTransactionCents: 0 });
    expect(r.stdout).toBe('Nothing changed: the rules already were so.\nNo rules now.\n');
  });

  cliTest('--unset sends null for each rule named, and says what was removed', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/agents/${AGENT_ID}/delegation`, { data: { rules: {}, changes: [{ field: 'autoApproveBelow', from: 50, to: null }] } });
    const r = await aex(['delegation', 'set', '--unset', 'auto-approve-below', '--unset', 'maxTransactionCents']);
    expect(exchange.requests[0]!.body).toEqual({ autoApproveBelow: null, maxTransactionCents: null });
    expect(r.stdout).toBe('Changed 1 rule; the others are kept.\nautoApproveBelow  removed (was 50)\n');
  });

  cliTest('D6.8: says when a child\'s rule was stored tighter than asked, and not when categories only came back in another order', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/agents/${PROVIDER_ID}/delegation`, { data: {
      rules: { maxDailySpendCents: 5000, allowedCategories: ['data', 'text'] },
      changes: [{ field: 'maxDailySpendCents', from: null, to: 5000 }, { field: 'allowedCategories', from: null, to: ['data', 'text'] }],
    } });
    const r = await aex(['delegation', 'set', '--agent', PROVIDER_ID, '--max-daily-spend-cents', '8000', '--allowed-categories', 'text,data']);
    expect(r.stdout).toBe('Changed 2 rules; the others are kept.\nmaxDailySpendCents  5000 (new; 8000 asked, capped at the rules a child starts from)\nallowedCategories   data,text (new)\n');
  });

  cliTest('--replace PUTs exactly the rules given, and says every other was removed', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PUT', `/v1/agents/${AGENT_ID}/delegation`, { data: { maxTransactionCents: 250 } });
    const r = await aex(['delegation', 'set', '--replace', '--max-transaction-cents', '250']);
    expect(exchange.requests.map((q) => [q.method, q.body])).toEqual([['PUT', { maxTransactionCents: 250 }]]);
    expect(r.stdout).toBe('Replaced: these are all the rules now; any other rule was removed.\nmaxTransactionCents  250\n');
  });

  cliTest('refuses, sending nothing: no rule given, an unknown rule to unset, a rule both set and unset, --unset with --replace', async ({ aex, exchange, profile: _ }) => {
    const tries = [
      ['delegation', 'set'],
      ['delegation', 'set', '--unset', 'budget'],
      ['delegation', 'set', '--max-transaction-cents', '5', '--unset', 'max-transaction-cents'],
      ['delegation', 'set', '--replace', '--unset', 'auto-approve-below'],
    ];
    const ran = await Promise.all(tries.map((args) => aex(args)));
    expect(ran.map((r) => r.code)).toEqual([2, 2, 2, 2]);
    expect(ran[0]!.stderr).toContain('Give at least one rule to change');
    expect(ran[1]!.stderr).toContain('--unset takes one of: max-transaction-cents, max-daily-spend-cents, allowed-categories, blocked-categories, require-approval-above-cents, auto-approve-below (not "budget")');
    expect(exchange.requests).toEqual([]);
  });

  cliTest('--account changes the account\'s defaults', async ({ aex, exchange, profile: _ }) => {
    exchange.on('PATCH', `/v1/accounts/${ACCOUNT_ID}/delegation`, { data: { rules: { allowedCategories: ['text'] }, changes: [] } });
    await aex(['delegation', 'set', '--account', '--allowed-categories', 'text']);
    expect(exchange.requests.map((q) => [q.method, q.path, q.body])).toEqual([['PATCH', `/v1/accounts/${ACCOUNT_ID}/delegation`, { allowedCategories: ['text'] }]]);
  });

  cliTest('--account without the account in the profile asks the exchange for it first', async ({ aex, exchange }) => {
    exchange.on('GET', '/v1/agents/env-agent', { data: agentView({ id: 'env-agent' }) });
    exchange.on('PATCH', `/v1/accounts/${ACCOUNT_ID}/delegation`, { data: { rules: {}, changes: [] } });
    await aex(['delegation', 'set', '--account', '--auto-approve-below', '5'], { env: { AEX_URL: exchange.url, AEX_AGENT_ID: 'env-agent', AEX_API_KEY: 'k' } });
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['GET', '/v1/agents/env-agent'], ['PATCH', `/v1/accounts/${ACCOUNT_ID}/delegation`]]);
  });
});
