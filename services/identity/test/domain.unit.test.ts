import { describe, expect, it } from 'vitest';
import type { Principal } from '@aex/contracts';
import { API_KEY_PATTERN, hashApiKey, issueApiKey, keyPrefix } from '../src/domain/api-keys.js';
import { effectiveDelegation, tightenDelegation } from '../src/domain/delegation.js';
import { base58btc, didDocument, didWebFor, ed25519Multibase, isEd25519PublicKey } from '../src/domain/did.js';
import { mayEditAgent, mayGovernAccount, mayGovernAgent, seesFullAgent } from '../src/domain/ownership.js';
import { isForbiddenAddress, webhookUrlProblem } from '../src/domain/webhook-url.js';

describe('D2.1 API keys', () => {
  it('issues ae_live_ + 43 base64url characters, hashed with SHA-256, prefix of 12', () => {
    const k = issueApiKey();
    expect(k.plaintext).toMatch(API_KEY_PATTERN);
    expect(k.hash).toBe(hashApiKey(k.plaintext));
    expect(k.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(k.prefix).toBe(k.plaintext.slice(0, 12));
    expect(keyPrefix('ae_live_abcdefgh')).toBe('ae_live_abcd');
  });
  it('uses the injected randomness (deterministic in tests) and never repeats by default', () => {
    const fixed = issueApiKey((n) => Buffer.alloc(n, 0xff));
    expect(fixed.plaintext).toBe(`ae_live_${'_'.repeat(42)}8`);
    expect(issueApiKey().plaintext).not.toBe(issueApiKey().plaintext);
  });
});

describe('D10.1 / D6.8 delegation', () => {
  it('overrides account defaults field by field', () => {
    expect(effectiveDelegation({ maxTransactionCents: 100, allowedCategories: ['a'] }, { maxTransactionCents: 50 })).toEqual({ maxTransactionCents: 50, allowedCategories: ['a'] });
  });
  it('tightens only: smaller numbers, intersected allow-lists, united block-lists', () => {
    const parent = { maxTransactionCents: 100, maxDailySpendCents: 1000, allowedCategories: ['a', 'b'], blockedCategories: ['x'] };
    const own = { maxTransactionCents: 500, maxDailySpendCents: 10, allowedCategories: ['b', 'c'], blockedCategories: ['y'], autoApproveBelow: 5 };
    expect(tightenDelegation(parent, own)).toEqual({ maxTransactionCents: 100, maxDailySpendCents: 10, allowedCategories: ['b'], blockedCategories: ['x', 'y'], autoApproveBelow: 5 });
  });
  it('keeps inherited rules the child does not mention', () => {
    expect(tightenDelegation({ maxTransactionCents: 100 }, {})).toEqual({ maxTransactionCents: 100 });
  });
});

describe('D6.6–D6.7 DIDs', () => {
  it('encodes base58btc like the reference vectors', () => {
    expect(base58btc(new TextEncoder().encode('Hello World!'))).toBe('2NEpo7TZRRrLZSi2U');
    expect(base58btc(Uint8Array.from([0, 0, 0x28, 0x7f, 0xb4, 0xcd]))).toBe('11233QC4');
    expect(base58btc(new Uint8Array())).toBe('');
  });
  it('writes Ed25519 keys as z6Mk… multibase of 0xed 0x01 + key (checked by an independent BigInt decoder)', () => {
    const raw = Buffer.from('2fe57da347cd62431528daac5fbb290730fff684afc4cfc2ed90995f58cb3b74', 'hex');
    const mb = ed25519Multibase(raw);
    expect(mb.startsWith('z6Mk')).toBe(true);
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    let n = 0n;
    for (const ch of mb.slice(1)) n = n * 58n + BigInt(alphabet.indexOf(ch));
    expect(n.toString(16).padStart(68, '0')).toBe(`ed01${raw.toString('hex')}`);
  });
  it('writes the port of the public host as %3A', () => {
    expect(didWebFor('http://127.0.0.1:8080', 'a1')).toBe('did:web:127.0.0.1%3A8080:agents:a1');
    expect(didWebFor('https://exchange.example.com', 'a1')).toBe('did:web:exchange.example.com:agents:a1');
  });
  it('lists every key, marks replaced ones revoked, and authenticates with the current one only', () => {
    const key = (n: number) => Buffer.alloc(32, n).toString('base64');
    const doc = didDocument({
      did: 'did:web:x:agents:1',
      profileUrl: 'https://x/v1/agents/1',
      keys: [
        { publicKey: key(1), createdAt: new Date(1), revokedAt: new Date(2) },
        { publicKey: key(2), createdAt: new Date(2), revokedAt: null },
      ],
    });
    expect(doc.verificationMethod.map((m) => [m.id, m.revoked])).toEqual([
      ['did:web:x:agents:1#key-1', new Date(2).toISOString()],
      ['did:web:x:agents:1#key-2', undefined],
    ]);
    expect(doc.authentication).toEqual(['did:web:x:agents:1#key-2']);
    expect(doc.assertionMethod).toEqual(['did:web:x:agents:1#key-2']);
  });
  it('accepts only the canonical base64 of 32 bytes as a signing key', () => {
    expect(isEd25519PublicKey(Buffer.alloc(32, 7).toString('base64'))).toBe(true);
    expect(isEd25519PublicKey(Buffer.alloc(31, 7).toString('base64'))).toBe(false);
    expect(isEd25519PublicKey(Buffer.alloc(32, 7).toString('base64url'))).toBe(false);
  });
});

describe('D2.2–D2.3 ownership', () => {
  const p = (over: Partial<Principal>): Principal => ({ agentId: 'me', accountId: 'acc', isOwner: false, status: 'active', parentAgentId: null, signingKeyPublic: null, ...over });
  const sameAccount = { id: 'other', accountId: 'acc' };
  const foreign = { id: 'x', accountId: 'elsewhere' };
  it.each([
    ['owner → sibling', p({ isOwner: true }), sameAccount, { full: true, edit: true, govern: true }],
    ['agent → itself', p({}), { id: 'me', accountId: 'acc' }, { full: true, edit: true, govern: false }],
    ['agent → sibling', p({}), sameAccount, { full: true, edit: false, govern: false }],
    ['owner → other account', p({ isOwner: true }), foreign, { full: false, edit: false, govern: false }],
  ])('%s', (_label, caller, agent, expected) => {
    expect({ full: seesFullAgent(caller, agent), edit: mayEditAgent(caller, agent), govern: mayGovernAgent(caller, agent) }).toEqual(expected);
  });
  it('lets only the owner agent govern its own account', () => {
    expect(mayGovernAccount(p({ isOwner: true }), 'acc')).toBe(true);
    expect(mayGovernAccount(p({ isOwner: true }), 'elsewhere')).toBe(false);
    expect(mayGovernAccount(p({}), 'acc')).toBe(false);
  });
});

describe('D14.5 webhook URLs at registration', () => {
  it.each([
    ['https://hooks.example.com/x', null],
    ['http://hooks.example.com/x', 'must use https'],
    ['ftp://hooks.example.com/x', 'must use http or https'],
    ['https://user:pw@hooks.example.com/x', 'must not carry credentials'],
    ['https://localhost/x', 'must not point at a local or internal host'],
    ['https://127.0.0.1/x', 'must not point at a private, loopback, link-local or metadata address'],
    ['https://[::ffff:10.0.0.1]/x', 'must not point at a private, loopback, link-local or metadata address'],
    ['https://[::ffff:169.254.169.254]/latest', 'must not point at a private, loopback, link-local or metadata address'],
    ['not a url', 'must be an absolute URL'],
  ])('judges %s', (url, problem) => {
    expect(webhookUrlProblem(url, false)).toBe(problem);
  });
  it('allows private targets when the configuration says so, but never other schemes or credentials', () => {
    expect(webhookUrlProblem('http://127.0.0.1:9999/hook', true)).toBeNull();
    expect(webhookUrlProblem('file:///etc/passwd', true)).toBe('must use http or https');
  });
  it.each([
    ['10.0.0.1', true], ['172.16.0.1', true], ['172.32.0.1', false], ['192.168.1.1', true], ['169.254.169.254', true],
    ['100.64.0.1', true], ['0.0.0.0', true], ['224.0.0.1', true], ['8.8.8.8', false],
    ['::1', true], ['::', true], ['fd00::1', true], ['fe80::1', true], ['ff02::1', true], ['2001:4860::8888', false],
    ['::ffff:a00:1', true], ['::ffff:10.0.0.1', true], ['::ffff:808:808', false], ['::127.0.0.1', true],
    ['64:ff9b::a9fe:a9fe', true], ['2002:c0a8:101::1', true], ['2002:808:808::1', false], ['0:0:0:0:0:ffff:7f00:1', true],
  ])('classifies %s as forbidden: %s', (ip, forbidden) => {
    expect(isForbiddenAddress(ip)).toBe(forbidden);
  });
});
