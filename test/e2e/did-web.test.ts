import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@aex/platform';
import { startTestExchange, type TestExchange } from './harness.js';

// did:web as the standard resolvers see it (docs/did-web.md): the gateway serves HTTPS itself from
// TLS_CERT_FILE / TLS_KEY_FILE, with a certificate this test makes; a separate Node process trusts
// it through NODE_EXTRA_CA_CERTS, as an operator's would trust a private CA, and resolves an agent's
// DID with the unmodified `did-resolver` and `web-did-resolver` packages.

const testDir = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

let ex: TestExchange;
let dir: string;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'aex-tls-'));
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]);
  port = await freePort();
  ex = await startTestExchange({ TLS_CERT_FILE: join(dir, 'cert.pem'), TLS_KEY_FILE: join(dir, 'key.pem'), PUBLIC_BASE_URL: `https://localhost:${port}` }, { port });
});
afterAll(async () => {
  await ex?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * What an outside party does, in a process of its own: sign up over https, register an Ed25519 key,
 * resolve the agent's DID, replace the key, resolve it again.
 */
const resolverScript = `
import { generateKeyPairSync } from 'node:crypto';
import { Resolver } from 'did-resolver';
import { getResolver } from 'web-did-resolver';

const base = process.env.EXCHANGE;
const call = async (method, path, body, apiKey) => {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: 'Bearer ' + apiKey } : {}) }, body: body && JSON.stringify(body) });
  return (await res.json()).data;
};
const publicKey = () => Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x, 'base64url').toString('base64');
const account = await call('POST', '/v1/accounts', { accountType: 'individual', email: 'did-' + Date.now() + '@example.com', displayName: 'DID', agent: { name: 'did-agent' } });
const first = publicKey();
const registered = await call('PATCH', '/v1/agents/' + account.agent.id, { signingKeyPublic: first }, account.apiKey);
const resolver = new Resolver(getResolver());
const before = await resolver.resolve(registered.didWeb);
const second = publicKey();
await call('PATCH', '/v1/agents/' + account.agent.id, { signingKeyPublic: second }, account.apiKey);
const after = await resolver.resolve(registered.didWeb);
console.log(JSON.stringify({ agentId: account.agent.id, didWeb: registered.didWeb, first, second, before, after }));
`;

const multibase = (b64: string) => {
  // z + base58btc of the multicodec ed25519-pub prefix (0xed 0x01) and the raw key.
  const bytes = Buffer.concat([Buffer.from([0xed, 0x01]), Buffer.from(b64, 'base64')]);
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = alphabet[Number(n % 58n)]! + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return `z${out}`;
};

interface Resolution {
  didDocument: { id: string; verificationMethod: { id: string; publicKeyMultibase: string; revoked?: string }[]; authentication: string[]; assertionMethod: string[] } | null;
  didResolutionMetadata: { error?: string; message?: string };
}

describe('did:web over the gateway\'s own HTTPS (TLS_CERT_FILE, TLS_KEY_FILE)', () => {
  it('resolves an agent\'s DID with did-resolver + web-did-resolver, its current key authenticating, the replaced one revoked', async () => {
    const { stdout } = await run(process.execPath, ['--dns-result-order=ipv4first', '--input-type=module', '-e', resolverScript], {
      cwd: testDir,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'), EXCHANGE: `https://localhost:${port}` },
    });
    const r = JSON.parse(stdout) as { agentId: string; didWeb: string; first: string; second: string; before: Resolution; after: Resolution };
    expect(r.didWeb).toBe(`did:web:localhost%3A${port}:agents:${r.agentId}`);
    expect(r.before.didResolutionMetadata.error, r.before.didResolutionMetadata.message).toBeUndefined();
    const before = r.before.didDocument!;
    expect(before.id).toBe(r.didWeb);
    const current = before.verificationMethod.find((m) => m.publicKeyMultibase === multibase(r.first))!;
    expect(current).toBeDefined();
    expect(before.authentication).toEqual([current.id]);

    const after = r.after.didDocument!;
    const replaced = after.verificationMethod.find((m) => m.publicKeyMultibase === multibase(r.first))!;
    const now = after.verificationMethod.find((m) => m.publicKeyMultibase === multibase(r.second))!;
    expect(replaced.revoked).toMatch(/^\d{4}-/);
    expect(now.revoked).toBeUndefined();
    expect(after.authentication).toEqual([now.id]);
    expect(after.assertionMethod).toEqual([now.id]);
  }, 60_000);

  it('refuses plain http on the TLS port', async () => {
    await expect(fetch(`http://127.0.0.1:${port}/v1/protocol`)).rejects.toThrow();
  });
});
