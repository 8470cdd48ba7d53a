import { describe, expect, it } from 'vitest';
import type { Principal } from '@aex/contracts';
import { API_KEY_PATTERN, hashApiKey, issueApiKey, keyPrefix } from '../src/domain/api-keys.js';
import { clampDelegation, effectiveDelegation, tightenDelegation } from '../src/domain/delegation.js';
import { base58btc, didDocument, didWebFor, ed25519Multibase } from '../src/domain/did.js';
import { mayEditAgent, mayGovernAccount, mayGovernAgent, seesFullAgent } from '../src/domain/ownership.js';
import { webhookUrlProblem, type WebhookUrlPolicy } from '../src/domain/webhook-url.js';

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
  it.each([
    ['a looser number is clamped, a tighter one kept', { maxTransactionCents: 100, maxDailySpendCents: 50 }, { maxTransactionCents: 500, maxDailySpendCents: 10 }, { maxTransactionCents: 100, maxDailySpendCents: 10 }],
    ['a number nothing limits is kept', {}, { autoApproveBelow: 40 }, { autoApproveBelow: 40 }],
    ['an allow-list is cut to the inherited one', { allowedCategories: ['a', 'b'] }, { allowedCategories: ['b', 'c'] }, { allowedCategories: ['b'] }],
    ['an allow-list outside the inherited one allows nothing', { allowedCategories: ['a'] }, { allowedCategories: ['c'] }, { allowedCategories: [] }],
    ['a block-list stays the child’s own', { blockedCategories: ['x'] }, { blockedCategories: ['y'] }, { blockedCategories: ['y'] }],
    ['rules the child does not set stay unset (the parent’s apply at each check)', { maxTransactionCents: 100, allowedCategories: ['a'] }, {}, {}],
  ])('D6.8 clamps a child’s own rules: %s', (_name, inherited, own, stored) => {
    expect(clampDelegation(inherited, own)).toEqual(stored);
    // What applies is the same whether the stored rules or the asked ones are tightened onto the inherited.
    expect(tightenDelegation(inherited, clampDelegation(inherited, own))).toEqual(tightenDelegation(inherited, own));
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

describe('D14.5 webhook URLs at registration (SSRF)', () => {
  // DNS is a table here: names that resolve, and to what.
  const dns: Record<string, string[]> = {
    'hooks.example.com': ['93.184.216.34'],
    'dual.example.com': ['93.184.216.34', '2606:2800:220:1::248'],
    'rebinder.example.net': ['93.184.216.34', '10.0.0.7'],
    'internal-alias.example.org': ['169.254.169.254'],
    'six.example.org': ['fd00::1'],
  };
  const policy = (allowPrivateNetworks = false): WebhookUrlPolicy => ({ allowPrivateNetworks, resolve: async (h) => dns[h] ?? [], ownHostNames: ['build-host-7'] });
  const judge = (url: string) => webhookUrlProblem(url, policy());

  it.each([
    // Public targets pass; a name that does not resolve yet passes (the dispatcher checks each connect).
    ['https://hooks.example.com/x', null],
    ['https://dual.example.com/x', null],
    ['https://not-yet-registered.example.com/x', null],
    ['https://HOOKS.Example.COM./x', null],
    ['https://93.184.216.34/x', null],
    ['https://[2606:2800:220:1::248]/x', null],
    ['https://8.8.8.8.nip.io/x', null],
    // Scheme and credentials.
    ['http://hooks.example.com/x', 'must use https'],
    ['ftp://hooks.example.com/x', 'must use http or https'],
    ['https://user:pw@hooks.example.com/x', 'must not carry credentials'],
    ['not a url', 'must be an absolute URL'],
  ])('accepts or refuses %s', async (url, problem) => {
    expect(await judge(url)).toBe(problem);
  });

  it.each([
    // Every URL the hardening issue observed being accepted.
    'https://localhost./', 'https://metadata.google.internal./computeMetadata/v1/', 'https://build-host-7/',
    'https://ip6-localhost/', 'https://localhost.localdomain/', 'https://metadata/', 'https://instance-data/latest/',
    'https://127.0.0.1.nip.io/', 'https://198.18.0.1/', 'https://192.0.0.1/', 'https://[2001:0::1]/', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
    // Loopback, private, link-local and metadata addresses in every spelling.
    'https://localhost/', 'https://LOCALHOST../', 'https://app.localhost/', 'https://127.0.0.1/', 'https://127.1/', 'https://2130706433/',
    'https://0x7f000001/', 'https://0177.0.0.1/', 'https://[::1]/', 'https://[::ffff:10.0.0.1]/', 'https://[::ffff:169.254.169.254]/latest',
    'https://[64:ff9b::a9fe:a9fe]/', 'https://[fd00:ec2::254]/', 'https://[fe80::1]/', 'https://100.100.100.200/', 'https://10.1.2.3/',
    'https://172.16.0.1/', 'https://192.168.1.1/', 'https://0.0.0.0/', 'https://[::]/', 'https://224.0.0.1/', 'https://255.255.255.255/',
    // Special-use and internal names, single labels, names spelling out private addresses.
    'https://printer.local/', 'https://svc.cluster.local/', 'https://db.internal/', 'https://x.test/', 'https://x.example/', 'https://x.invalid/',
    'https://abc.onion/', 'https://router.home.arpa/', 'https://1.0.0.127.in-addr.arpa/', 'https://intranet/', 'https://kubernetes/',
    'https://app-10-0-0-1.sslip.io/', 'https://10.0.0.1.example.com/', 'https://7f000001.nip.io/', 'https://customer-c0a80001.nip.io/',
    'https://anything.localtest.me/', 'https://lvh.me/',
    // Names that resolve to a forbidden address (any one of their addresses).
    'https://rebinder.example.net/', 'https://internal-alias.example.org/', 'https://six.example.org/',
  ])('refuses %s', async (url) => {
    expect(await judge(url)).toEqual(expect.any(String));
  });

  it('allows private targets when the configuration says so, but never other schemes or credentials', async () => {
    expect(await webhookUrlProblem('http://127.0.0.1:9999/hook', policy(true))).toBeNull();
    expect(await webhookUrlProblem('file:///etc/passwd', policy(true))).toBe('must use http or https');
    expect(await webhookUrlProblem('https://u:p@127.0.0.1/', policy(true))).toBe('must not carry credentials');
  });
});
