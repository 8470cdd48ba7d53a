import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap, type Outcome } from '@agent-exchange/client';
import { expectError, startTestExchange, uniqueEmail, type Member, type TestExchange } from './harness.js';
import { funded, serviceBody, type Party } from './transaction-kit.js';

// D24.6: names shown to people — an account's display name, an agent's name, a service's name —
// refuse bidirectional controls and invisible characters with 400 VALIDATION_ERROR naming the field
// and the character, and are stored without leading and trailing spaces. Descriptions may hold them.

let ex: TestExchange;
let owner: Member;
let worker: Party;

beforeAll(async () => {
  ex = await startTestExchange();
  owner = await ex.signUp();
  worker = await funded(ex, 3000);
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

const RLO = '\u202E';
const ZWSP = '\u200B';

/** The one refusal: 400, the field, the character by code point and name. */
function refused(r: Outcome<unknown>, field: string, character: string): void {
  expectError(r, 400, 'VALIDATION_ERROR');
  if (r.ok) return;
  expect(r.error.errors).toEqual([expect.objectContaining({ code: 'VALIDATION_ERROR', field, message: expect.stringContaining(`contains ${character}`) })]);
}

const signUp = (displayName: string, name = 'owner') => ex.anon.createAccount({ accountType: 'individual', email: uniqueEmail(), displayName, agent: { name } });

describe('names are plain text (D24.6)', () => {
  it('D24.6: an account\'s display name, at sign-up and when changed', async () => {
    refused(await signUp(`Acme${RLO}gpj.exe`), '/body/displayName', 'U+202E RIGHT-TO-LEFT OVERRIDE');
    refused(await owner.client.updateAccount(owner.accountId, { displayName: `Acme${ZWSP}` }), '/body/displayName', 'U+200B ZERO WIDTH SPACE');
    const created = unwrap(await signUp('  Acme Corp  ', ' first agent '));
    expect([created.displayName, created.agent.name]).toEqual(['Acme Corp', 'first agent']);
    expect(unwrap(await owner.client.updateAccount(owner.accountId, { displayName: ' Renamed ' })).displayName).toBe('Renamed');
    expectError(await owner.client.updateAccount(owner.accountId, { displayName: '   ' }), 400, 'VALIDATION_ERROR');
  });

  it('D24.6: an agent\'s name, at sign-up, at creation, when changed and when spawned', async () => {
    refused(await signUp('Acme', `bot\u2066`), '/body/agent/name', 'U+2066 LEFT-TO-RIGHT ISOLATE');
    refused(await owner.client.createAgent({ name: `\u200Fworker`, agentType: 'persistent' }), '/body/name', 'U+200F RIGHT-TO-LEFT MARK');
    refused(await owner.client.updateAgent(owner.agentId, { name: `owner\uFEFF` }), '/body/name', 'U+FEFF ZERO WIDTH NO-BREAK SPACE');
    refused(await worker.client.spawnAgent(worker.agentId, { name: `child\u061C` }), '/body/name', 'U+061C ARABIC LETTER MARK');
    expect(unwrap(await owner.client.createAgent({ name: ' helper ', agentType: 'persistent' })).name).toBe('helper');
    refused(await owner.client.updateAgent(owner.agentId, { name: '\tchief' }), '/body/name', 'U+0009, a control character');
    // A description is longer text: a right-to-left mark in a sentence stays.
    const described = unwrap(await owner.client.updateAgent(owner.agentId, { name: ' chief ', description: `مرحبا\u200F hello` }));
    expect([described.name, described.description]).toEqual(['chief', `مرحبا\u200F hello`]);
  });

  it('D24.6: a service\'s name; its description may hold format characters', async () => {
    refused(await worker.client.createService(serviceBody({ name: `Digest${'\u202D'}` })), '/body/name', 'U+202D LEFT-TO-RIGHT OVERRIDE');
    refused(await worker.client.createService(serviceBody({ name: `Di${'\u2060'}gest` })), '/body/name', 'U+2060 WORD JOINER');
    const s = unwrap(await worker.client.createService(serviceBody({ name: '  Clean digest ', description: `Computes a digest\u200D of a text payload.` })));
    expect([s.name, s.description]).toEqual(['Clean digest', `Computes a digest\u200D of a text payload.`]);
  });
});
