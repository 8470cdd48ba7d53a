import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeClient, unwrap } from '@aex/client';
import { createTestBus, createTestDatabase, eventually, testNamespace, TEST_NATS_URL, type TestDatabase } from '@aex/platform/testing';
import { containersOf, imageWorkdir, IMAGE_ROOT, ready, start, terminate, type RunningContainer } from '../deploy/boot.js';
import { template, type KubeObject } from '../deploy/helm.js';
import { signingMember } from './harness.js';

// Issue 13: what the Helm chart renders is what runs. The migrations Job's containers and every
// Deployment's container are started from the rendered command and environment (test/deploy/boot.ts
// says what differs from a pod), against this machine's Postgres and NATS, probed as the kubelet
// would, used through the gateway, and stopped with SIGTERM within their grace period.

interface Booted {
  containers: RunningContainer[];
  gateway: string;
}

describe('the services booted from the rendered chart (issue 13)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function isolated(): Promise<{ db: TestDatabase; namespace: string }> {
    const db = await createTestDatabase();
    const namespace = testNamespace();
    cleanups.push(async () => {
      const { dispose } = await createTestBus('jetstream', namespace);
      await dispose();
      await db.drop();
    });
    return { db, namespace };
  }

  async function render(valueFile: string, set: Record<string, string | number | boolean>): Promise<KubeObject[]> {
    const r = await template({ valueFiles: [valueFile], set });
    if (!r.ok) throw new Error(r.error);
    return r.objects;
  }

  /** The Job first (every container must exit 0), then every Deployment until its readiness probe passes. */
  async function boot(objects: KubeObject[], secrets: Record<string, Record<string, string>> = {}): Promise<Booted> {
    for (const job of (await containersOf(objects, 'Job', secrets)).map(start)) {
      const code = await job.exited;
      expect(code, `${job.run.container} migrations:\n${job.output()}`).toBe(0);
      expect(job.output()).toMatch(new RegExp(`${job.run.container} migrations done`));
    }
    const containers = (await containersOf(objects, 'Deployment', secrets)).map(start);
    cleanups.push(async () => {
      for (const c of containers) if (c.child.exitCode === null) c.child.kill('SIGKILL');
    });
    await Promise.all(containers.map((c) => ready(c)));
    const gateway = containers.find((c) => c.run.container === 'gateway')!;
    return { containers, gateway: `http://127.0.0.1:${gateway.run.ports.http}` };
  }

  /** A purchase through the gateway touches every service: sign-up, funding, a listing, discovery, hold, settle. */
  async function smoke(gateway: string): Promise<void> {
    const anon = new ExchangeClient({ baseUrl: gateway });
    const [provider, consumer] = [await signingMember(anon, 'provider'), await signingMember(anon, 'consumer')];
    expect(unwrap(await consumer.client.getAgent(consumer.id)).id).toBe(consumer.id);
    unwrap(await consumer.client.fund(consumer.id, 2000));
    const service = unwrap(await provider.client.createService({
      name: 'Rendered echo', description: 'Answers with the text it was given, deployed by the chart.', version: '1.0.0', category: 'text',
      inputSchema: { type: 'object', required: ['text'] }, outputSchema: { type: 'object', required: ['text'] },
      pricing: { model: 'fixed', basePriceCents: 700 }, sla: { maxLatencyMs: 1000, timeoutMs: 60_000 },
    }));
    await eventually(async () => unwrap(await consumer.client.discover({ need: 'echo the text back' })).matches.some((m) => m.serviceId === service.id), 20_000, 1000);
    const created = unwrap(await consumer.client.createTransaction({ serviceId: service.id, input: { text: 'hi' } }));
    expect(created.status).toBe('funds_held');
    expect(unwrap(await provider.client.deliver(created.id, { text: 'hi' })).status).toBe('delivered');
    expect(unwrap(await consumer.client.verify(created.id)).status).toBe('settled');
    expect(unwrap(await provider.client.getWallet(provider.id)).balanceCents).toBe(665);
    // The webhook service answers for the agent (no URL set: nothing to sign yet).
    expect(unwrap(await consumer.client.getWebhook(consumer.id))).toMatchObject({ agentId: consumer.id, url: null, secret: null });
  }

  /** SIGTERM to all: each exits 0 within its grace period, having logged no warning or error (JSON logs). */
  async function stopAll(booted: Booted): Promise<void> {
    const codes = await Promise.all(booted.containers.map(async (c) => [c.run.container, await terminate(c)] as const));
    expect(Object.fromEntries(codes)).toEqual(Object.fromEntries(booted.containers.map((c) => [c.run.container, 0])));
    for (const c of booted.containers) {
      const lines = c.output().split('\n').filter(Boolean);
      expect(lines.filter((l) => !l.startsWith('{')), `${c.run.container}: every line is JSON (LOG_FORMAT json)`).toEqual([]);
      expect(lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40), c.run.container).toEqual([]);
    }
  }

  /** An OTLP/HTTP collector stand-in: what each export request carried, by path. */
  async function collector(): Promise<{ endpoint: string; received: { path: string; body: Buffer }[] }> {
    const received: { path: string; body: Buffer }[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => server.close(() => r())));
    return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
  }

  it('maps the image\'s paths as the Dockerfile lays them out', () => {
    expect(imageWorkdir()).toBe(IMAGE_ROOT);
  });

  it('minimal values: migrations, six services ready, a purchase settled through the gateway, a clean stop', async () => {
    const { db, namespace } = await isolated();
    const objects = await render('minimal-values.yaml', {
      'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace, 'config.PAYMENTS_PROVIDER': 'sandbox',
    });
    const booted = await boot(objects);
    expect(booted.containers.map((c) => c.run.container).sort()).toEqual(['catalog', 'gateway', 'identity', 'transactions', 'wallet', 'webhooks']);
    // Each service's readiness names its checks; the catalog's sentence encoder is loaded.
    const catalog = booted.containers.find((c) => c.run.container === 'catalog')!;
    expect(await (await fetch(catalog.run.readyUrl!)).text()).toMatch(/meaning/);
    await smoke(booted.gateway);
    await stopAll(booted);
  });

  it('production values: the platform team\'s Secret with a login key per service, the operator API on', async () => {
    const { db, namespace } = await isolated();
    const otel = await collector();
    const objects = await render('production-values.yaml', {
      'config.BUS_NAMESPACE': namespace, 'config.PAYMENTS_PROVIDER': 'sandbox',
      'config.OTEL_EXPORTER_OTLP_ENDPOINT': otel.endpoint, 'config.OTEL_TRACES_SAMPLER': 'always_on',
    });
    const adminToken = 'platform-team-operator-token';
    const perService = Object.fromEntries(['IDENTITY', 'CATALOG', 'TRANSACTIONS', 'WALLET', 'WEBHOOKS'].map((s) => [`${s}_DATABASE_URL`, db.url]));
    const booted = await boot(objects, { 'exchange-secrets': { NATS_URL: TEST_NATS_URL, DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, ...perService } });
    await smoke(booted.gateway);
    const admin = await fetch(`${booted.gateway}/admin/v1/ledger/check`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(admin.status).toBe(200);
    await stopAll(booted);
    // The OTel settings passed through: every service exported its spans under its own name.
    const traces = Buffer.concat(otel.received.filter((r) => r.path === '/v1/traces').map((r) => r.body)).toString('latin1');
    for (const service of ['gateway', 'identity', 'catalog', 'transactions', 'wallet', 'webhooks']) expect(traces).toContain(`agent-exchange-${service}`);
  });

  it('a Secret the deployment names but nobody created stops the boot, as CreateContainerConfigError would', async () => {
    const objects = await render('production-values.yaml', {});
    await expect(containersOf(objects, 'Deployment', {})).rejects.toThrow(/Secret exchange-secrets does not exist/);
    await expect(containersOf(objects, 'Deployment', { 'exchange-secrets': { NATS_URL: TEST_NATS_URL, ADMIN_TOKEN: 'x'.repeat(16) } })).rejects.toThrow(/has no key (IDENTITY|CATALOG|TRANSACTIONS|WALLET|WEBHOOKS)_DATABASE_URL/);
  });

  it('a value the schema cannot judge but that breaks the pod fails the boot, naming the workload', async () => {
    const { db, namespace } = await isolated();
    const objects = await render('minimal-values.yaml', {
      'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace, 'services.identity.env.NODE_OPTIONS': '--no-such-node-flag',
      'migrations.enabled': false,
    });
    const identity = (await containersOf(objects, 'Deployment')).find((c) => c.container === 'identity')!;
    const running = start(identity);
    cleanups.push(async () => void (running.child.exitCode === null && running.child.kill('SIGKILL')));
    await expect(ready(running, 30_000)).rejects.toThrow(/aex-agent-exchange-identity exited with 9 before it was ready[\s\S]*no-such-node-flag/);
  });
});
