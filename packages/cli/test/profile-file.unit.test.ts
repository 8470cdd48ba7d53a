import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect } from 'vitest';
import { generateSigningKey, publicKeyOf } from '@agent-exchange/client';
import { readProfiles, saveProfile } from '@aex/agent-kit';
import { ACCOUNT_ID, AGENT_ID, agentProfile, API_KEY, cliTest } from './cli-test.js';
import { isSignedBy, startFakeExchange, type FakeExchange } from './fake-exchange.js';
import { agentView, walletView } from './views.js';

const NEW_KEY = 'ae_live_new0123456789';

/** The exchange's answers to a signup: the new account with its owner agent, then the key registration. */
function answerSignup(exchange: FakeExchange): void {
  exchange.on('POST', '/v1/accounts', { status: 201, data: { id: ACCOUNT_ID, apiKey: NEW_KEY, agent: { id: AGENT_ID } } });
  exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
  exchange.on('PATCH', `/v1/agents/${AGENT_ID}`, { data: agentView({ signingKeyPublic: 'registered' }) });
}

const signup = (url: string, ...more: string[]) => ['--url', url, 'signup', '--email', 'me@example.com', '--display-name', 'Me', ...more];

describe('signup', () => {
  cliTest('creates the account without credentials, then registers a new signing key for its owner agent', async ({ aex, exchange, configPath }) => {
    answerSignup(exchange);
    expect((await aex(signup(exchange.url, '--agent-name', 'Buyer bot'))).code).toBe(0);
    const [create, read, register] = exchange.requests;
    expect([create!.method, create!.path, create!.headers.authorization]).toEqual(['POST', '/v1/accounts', undefined]);
    expect(create!.body).toEqual({ accountType: 'individual', email: 'me@example.com', displayName: 'Me', agent: { name: 'Buyer bot' } });
    expect(create!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect([read!.method, read!.path, read!.headers.authorization]).toEqual(['GET', `/v1/agents/${AGENT_ID}`, `Bearer ${NEW_KEY}`]);
    const saved = readProfiles(configPath).profiles.default!;
    expect([register!.method, register!.path]).toEqual(['PATCH', `/v1/agents/${AGENT_ID}`]);
    expect(register!.body).toEqual({ signingKeyPublic: publicKeyOf(saved.signingSecretKey!), signingKeyProof: expect.any(String) });
  });

  cliTest('saves the credentials as the current profile in a file only its owner can read, and prints no API key', async ({ aex, exchange, configPath }) => {
    answerSignup(exchange);
    const r = await aex(signup(exchange.url, '--save-as', 'buyer'));
    const file = readProfiles(configPath);
    expect(file).toEqual({ current: 'buyer', profiles: { buyer: { url: exchange.url, accountId: ACCOUNT_ID, agentId: AGENT_ID, apiKey: NEW_KEY, signingSecretKey: expect.any(String) } } });
    expect([statSync(configPath).mode & 0o777, statSync(dirname(configPath)).mode & 0o777]).toEqual([0o600, 0o700]);
    expect(r.stdout).toBe(
      `profile      buyer\naccount      ${ACCOUNT_ID}\nagent        ${AGENT_ID}\nsigning key  ${publicKeyOf(file.profiles.buyer!.signingSecretKey!)}\n`
      + `The API key and signing key are saved in ${configPath} (mode 600).\n`,
    );
  });

  cliTest('--show-key also prints the API key', async ({ aex, exchange }) => {
    answerSignup(exchange);
    expect((await aex(signup(exchange.url, '--show-key'))).stdout).toContain(`api key      ${NEW_KEY}\n`);
  });

  cliTest('names the profile after --profile when --save-as is not given', async ({ aex, exchange, configPath }) => {
    answerSignup(exchange);
    await aex(['--profile', 'work', ...signup(exchange.url)]);
    expect(readProfiles(configPath).current).toBe('work');
  });

  cliTest('without an exchange URL asks for one, and sends nothing', async ({ aex, exchange }) => {
    const r = await aex(['signup', '--email', 'me@example.com', '--display-name', 'Me']);
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'aex: Which exchange? Give --url (e.g. http://127.0.0.1:8080) or set AEX_URL.\n' });
    expect(exchange.requests).toEqual([]);
  });
});

describe('login', () => {
  cliTest('checks the API key by reading the agent, and saves it with the signing key given', async ({ aex, exchange, configPath }) => {
    const key = generateSigningKey();
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView({ signingKeyPublic: key.publicKey }) });
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID, '--api-key', API_KEY, '--signing-key', key.secretKey, '--save-as', 'buyer']);
    expect(exchange.requests.map((q) => [q.method, q.path, q.headers.authorization])).toEqual([['GET', `/v1/agents/${AGENT_ID}`, `Bearer ${API_KEY}`]]);
    expect(readProfiles(configPath)).toEqual({ current: 'buyer', profiles: { buyer: { url: exchange.url, accountId: ACCOUNT_ID, agentId: AGENT_ID, apiKey: API_KEY, signingSecretKey: key.secretKey } } });
    expect(r.stdout).toBe(`profile  buyer\naccount  ${ACCOUNT_ID}\nagent    ${AGENT_ID} (Buyer)\nSaved in ${configPath} (mode 600).\n`);
  });

  cliTest('takes the API key from AEX_API_KEY', async ({ aex, exchange, configPath }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
    await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID], { env: { AEX_API_KEY: 'ae_live_from_env' } });
    expect(readProfiles(configPath).profiles.default!.apiKey).toBe('ae_live_from_env');
  });

  cliTest('says to generate and register a signing key when the agent has none', async ({ aex, exchange }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID, '--api-key', API_KEY]);
    expect(r.stdout).toMatch(/\nNo signing key yet: run aex keys generate, then aex keys register, before buying or delivering\.\n$/);
  });

  cliTest('says when the signing key given is not the registered one', async ({ aex, exchange }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView({ signingKeyPublic: generateSigningKey().publicKey }) });
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID, '--api-key', API_KEY, '--signing-key', generateSigningKey().secretKey]);
    expect(r.stdout).toContain('The signing key is not the one registered for this agent: run aex keys register before buying or delivering.\n');
  });

  cliTest('refuses a signing key that is not a base64 Ed25519 secret key, saving nothing', async ({ aex, exchange, configPath }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: agentView() });
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID, '--api-key', API_KEY, '--signing-key', 'c2hvcnQ=']);
    expect([r.code, r.stderr]).toEqual([2, 'aex: The signing key is not a base64 Ed25519 secret key (32 bytes).\n']);
    expect(readProfiles(configPath)).toEqual({ profiles: {} });
  });

  cliTest('refuses an agent of another account (its public view), with exit 1', async ({ aex, exchange }) => {
    exchange.on('GET', `/v1/agents/${AGENT_ID}`, { data: { id: AGENT_ID, name: 'Someone else', signingKeyPublic: null } });
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID, '--api-key', API_KEY]);
    expect([r.code, r.stderr]).toEqual([1, 'aex: That agent is not of the API key\'s account.\n']);
  });

  cliTest('without an API key and no terminal to ask at, says how to give one', async ({ aex, exchange }) => {
    const r = await aex(['--url', exchange.url, 'login', '--agent-id', AGENT_ID]);
    expect([r.code, r.stderr]).toEqual([2, 'aex: Give the API key: --api-key, AEX_API_KEY, or type it at the prompt.\n']);
  });
});

describe('profiles', () => {
  cliTest('lists every profile, the current one starred, with only the API key\'s first 12 characters', async ({ aex, configPath }) => {
    saveProfile(configPath, 'seller', { url: 'http://s', agentId: 'agent-s', apiKey: 'ae_live_seller_secret' });
    saveProfile(configPath, 'buyer', { url: 'http://b', agentId: 'agent-b', apiKey: 'ae_live_buyer_secret', signingSecretKey: 'k' });
    const r = await aex(['profiles']);
    expect(r.stdout).toBe(
      '   PROFILE  URL       AGENT    KEY            SIGNS\n'
      + '   seller   http://s  agent-s  ae_live_sell…  no\n'
      + '*  buyer    http://b  agent-b  ae_live_buye…  yes\n',
    );
    expect(r.stdout).not.toContain('secret');
  });

  cliTest('with --json shows whether a profile signs, never its keys', async ({ aex, configPath }) => {
    saveProfile(configPath, 'buyer', { url: 'http://b', agentId: 'agent-b', apiKey: 'ae_live_buyer_secret', signingSecretKey: 'the-secret-key' });
    expect(JSON.parse((await aex(['--json', 'profiles'])).stdout)).toEqual([{ name: 'buyer', current: true, url: 'http://b', agentId: 'agent-b', signing: true, keyPrefix: 'ae_live_buye' }]);
  });
});

describe('which profile a command acts as', () => {
  /** Saves a second profile `other`, left not current, and answers its wallet. */
  function otherProfile(exchange: FakeExchange, configPath: string) {
    const other = { ...agentProfile(exchange.url), agentId: 'other-agent', apiKey: 'ae_live_other' };
    saveProfile(configPath, 'other', other, false);
    exchange.on('GET', '/v1/wallets/other-agent', { data: walletView() });
    return other;
  }

  cliTest('the current one, its requests signed with its key', async ({ aex, exchange, profile }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
    await aex(['wallet', 'balance']);
    const [sent] = exchange.requests;
    expect([sent!.path, sent!.headers.authorization, isSignedBy(sent!, profile.signingSecretKey)]).toEqual([`/v1/wallets/${AGENT_ID}`, `Bearer ${API_KEY}`, true]);
  });

  cliTest('the one --profile names', async ({ aex, exchange, configPath, profile: _ }) => {
    const other = otherProfile(exchange, configPath);
    await aex(['--profile', 'other', 'wallet', 'balance']);
    expect(exchange.requests.map((q) => [q.path, q.headers.authorization, isSignedBy(q, other.signingSecretKey)])).toEqual([['/v1/wallets/other-agent', 'Bearer ae_live_other', true]]);
  });

  cliTest('the one AEX_PROFILE names', async ({ aex, exchange, configPath, profile: _ }) => {
    otherProfile(exchange, configPath);
    await aex(['wallet', 'balance'], { env: { AEX_PROFILE: 'other' } });
    expect(exchange.requests.map((q) => q.path)).toEqual(['/v1/wallets/other-agent']);
  });

  cliTest('none, when --profile names one the file does not have: the ones it has are listed', async ({ aex, configPath, profile: _ }) => {
    const r = await aex(['--profile', 'nope', 'wallet', 'balance']);
    expect([r.code, r.stderr]).toEqual([2, `aex: No profile "nope" in ${configPath}. Profiles: me.\n`]);
  });

  cliTest('the profile, at the exchange --url names', async ({ aex, profile }) => {
    const elsewhere = await startFakeExchange();
    try {
      elsewhere.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
      expect((await aex(['--url', elsewhere.url, 'wallet', 'balance'])).code).toBe(0);
      expect(elsewhere.requests.map((q) => [q.path, q.headers.authorization, isSignedBy(q, profile.signingSecretKey)])).toEqual([[`/v1/wallets/${AGENT_ID}`, `Bearer ${API_KEY}`, true]]);
    } finally {
      await elsewhere.close();
    }
  });

  cliTest('the environment alone, with no profile file', async ({ aex, exchange, configPath }) => {
    exchange.on('GET', '/v1/wallets/env-agent', { data: walletView() });
    const r = await aex(['wallet', 'balance'], { env: { AEX_URL: exchange.url, AEX_AGENT_ID: 'env-agent', AEX_API_KEY: 'ae_live_env' } });
    expect(r.code).toBe(0);
    expect(exchange.requests.map((q) => [q.path, q.headers.authorization, q.headers['x-ae-signature']])).toEqual([['/v1/wallets/env-agent', 'Bearer ae_live_env', undefined]]);
    expect(() => statSync(configPath)).toThrow(/ENOENT/);
  });

  cliTest('none, when others can read the profile file: it holds secrets', async ({ aex, configPath, profile: _ }) => {
    chmodSync(configPath, 0o644);
    const r = await aex(['wallet', 'balance']);
    expect([r.code, r.stderr]).toEqual([2, `aex: ${configPath} can be read by other users (mode 644); it holds secrets. Run: chmod 600 ${configPath}\n`]);
  });

  cliTest('none, when the profile file is not JSON', async ({ aex, configPath, profile: _ }) => {
    writeFileSync(configPath, '{ not json');
    const r = await aex(['wallet', 'balance']);
    expect([r.code, r.stderr]).toEqual([2, `aex: ${configPath} is not valid JSON; fix or remove it.\n`]);
    expect(readFileSync(configPath, 'utf8')).toBe('{ not json');
  });
});
