import { describe, expect, it } from 'vitest';
import { loadConfig } from '@aex/platform';
import { ofKind, render, template, validateKubeObject, type KubeObject } from './helm.js';

// D22.1: the catalog's sentence encoder in the Helm chart — `discovery.encoder.*` rendered as the
// catalog's environment (and nobody else's), its API key from the chart's Secret or one of yours,
// the endpoint's port open in the catalog's NetworkPolicy, and what the catalog would refuse at start
// refused by helm first.

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
type Deployment = KubeObject & { spec: { template: { spec: { containers: { env: Env[] }[] } } } };
type Policy = KubeObject & { spec: { egress: { ports?: { port: number }[] }[] } };

const openai = {
  'discovery.encoder.type': 'openai', 'discovery.encoder.url': 'https://api.example.com/v1', 'discovery.encoder.model': 'text-embedding-3-small',
  'discovery.encoder.dimensions': 256, 'discovery.encoder.batchSize': 32, 'discovery.encoder.timeoutMs': 5000,
};

/** Each Deployment's environment variables of the encoder, by service. */
function encoderEnv(objects: KubeObject[]): Record<string, Env[]> {
  return Object.fromEntries(ofKind<Deployment>(objects, 'Deployment').map((d) => [
    d.metadata.name.replace('aex-agent-exchange-', ''),
    d.spec.template.spec.containers[0]!.env.filter((e) => e.name.startsWith('DISCOVERY_ENCODER')),
  ]));
}
const plain = (env: Env[]) => Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

describe('the catalog\'s sentence encoder in the Helm chart (D22.1)', () => {
  it('renders the builtin encoder by default, for the catalog only', async () => {
    const envs = encoderEnv(await render('minimal-values.yaml'));
    expect(plain(envs.catalog!)).toEqual({ DISCOVERY_ENCODER: 'builtin', DISCOVERY_ENCODER_BATCH_SIZE: '64', DISCOVERY_ENCODER_TIMEOUT_MS: '10000' });
    for (const [service, env] of Object.entries(envs)) if (service !== 'catalog') expect(env, service).toEqual([]);
  });

  it('renders an OpenAI-compatible endpoint as settings the catalog accepts, its key from the chart\'s Secret, its port open', async () => {
    const objects = await render('minimal-values.yaml', { ...openai, 'discovery.encoder.apiKey': 'sk-chart-kept-123' });
    for (const o of objects) validateKubeObject(o);
    const env = encoderEnv(objects).catalog!;
    const settings = plain(env);
    expect(settings).toEqual({
      DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_URL: 'https://api.example.com/v1', DISCOVERY_ENCODER_MODEL: 'text-embedding-3-small',
      DISCOVERY_ENCODER_DIMENSIONS: '256', DISCOVERY_ENCODER_BATCH_SIZE: '32', DISCOVERY_ENCODER_TIMEOUT_MS: '5000',
    });
    const key = env.find((e) => e.name === 'DISCOVERY_ENCODER_API_KEY')!.valueFrom!.secretKeyRef;
    expect(key).toEqual({ name: 'aex-agent-exchange-secrets', key: 'DISCOVERY_ENCODER_API_KEY' });
    const secret = ofKind<KubeObject & { stringData: Record<string, string> }>(objects, 'Secret').find((s) => !s.metadata.annotations?.['helm.sh/hook'])!;
    expect(secret.stringData.DISCOVERY_ENCODER_API_KEY).toBe('sk-chart-kept-123');
    // The key is in no ConfigMap and no plain value; what the chart renders, the catalog accepts at start.
    expect(JSON.stringify(ofKind(objects, 'ConfigMap'))).not.toContain('sk-chart-kept-123');
    expect(JSON.stringify(env)).not.toContain('sk-chart-kept-123');
    expect(loadConfig({ ...settings, DISCOVERY_ENCODER_API_KEY: secret.stringData.DISCOVERY_ENCODER_API_KEY })).toMatchObject({ DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_DIMENSIONS: 256 });
    // The catalog may reach the endpoint's port (443 for https); no other service gets it.
    const policies = ofKind<Policy>(objects, 'NetworkPolicy');
    const egress = (s: string) => policies.find((p) => p.metadata.name === `aex-agent-exchange-${s}`)!.spec.egress[0]!.ports!.map((p) => p.port);
    expect(egress('catalog')).toContain(443);
    expect(egress('wallet')).not.toContain(443);
  });

  it('takes the key from a Secret of yours, and an endpoint\'s own port', async () => {
    const objects = await render('minimal-values.yaml', { ...openai, 'discovery.encoder.url': 'http://tei.ml.svc:8080/v1', 'discovery.encoder.existingSecret': 'ml-keys', 'discovery.encoder.existingSecretKey': 'tei-token' });
    const key = encoderEnv(objects).catalog!.find((e) => e.name === 'DISCOVERY_ENCODER_API_KEY')!.valueFrom!.secretKeyRef;
    expect(key).toEqual({ name: 'ml-keys', key: 'tei-token' });
    const secrets = ofKind<KubeObject & { stringData: Record<string, string> }>(objects, 'Secret');
    for (const s of secrets) expect(Object.keys(s.stringData)).not.toContain('DISCOVERY_ENCODER_API_KEY');
    const catalogPolicy = ofKind<Policy>(objects, 'NetworkPolicy').find((p) => p.metadata.name.endsWith('-catalog'))!;
    expect(catalogPolicy.spec.egress[0]!.ports!.map((p) => p.port)).toContain(8080);
    // Without a key, no variable for it.
    const keyless = await render('minimal-values.yaml', openai);
    expect(encoderEnv(keyless).catalog!.map((e) => e.name)).not.toContain('DISCOVERY_ENCODER_API_KEY');
  });

  it.each([
    ['an encoder that does not exist', { 'discovery.encoder.type': 'sentence-bert' }, /type/],
    ['openai without its endpoint', { 'discovery.encoder.type': 'openai', 'discovery.encoder.model': 'm' }, /discovery.encoder.url is required when discovery.encoder.type is openai/],
    ['openai without its model', { 'discovery.encoder.type': 'openai', 'discovery.encoder.url': 'http://tei/v1' }, /discovery.encoder.model is required when discovery.encoder.type is openai/],
    ['an endpoint with credentials in its URL', { ...openai, 'discovery.encoder.url': 'https://user:pw@api.example.com/v1' }, /url/],
    ['a model named like stored dimensions', { ...openai, 'discovery.encoder.model': 'model@256' }, /must not end in @<digits>/],
    ['dimensions beyond what the catalog keeps', { ...openai, 'discovery.encoder.dimensions': 100000 }, /dimensions/],
    ['a batch size of zero', { ...openai, 'discovery.encoder.batchSize': 0 }, /batchSize/],
    ['the key as a plain variable of the catalog', { 'services.catalog.env.DISCOVERY_ENCODER_API_KEY': 'sk-plain' }, /env/],
  ] as [string, Record<string, string | number>, RegExp][])('refuses %s', async (_what, set, message) => {
    const r = await template({ valueFiles: ['minimal-values.yaml'], set });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(message);
  });
});
