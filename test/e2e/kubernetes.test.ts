import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TEST_NATS_URL } from '@aex/platform/testing';
import { containersOf, imageWorkdir, IMAGE_ROOT, ready, start } from '../deploy/boot.js';
import { render, repoRoot } from '../deploy/helm.js';
import { boot, Cleanups, collector, isolated, smoke, stopAll } from './kube-kit.js';

// What the Helm chart renders is what runs. The migrations Job's containers and every
// Deployment's container are started from the rendered command and environment (test/deploy/boot.ts
// says what differs from a pod), against this machine's Postgres and NATS, probed as the kubelet
// would, used through the gateway, and stopped with SIGTERM within their grace period.
// image.test.ts runs the same in the built image.

/**
 * Six services and the migrations started as processes, each loading its TypeScript: 22–44 s on an
 * idle two-core machine (production values the longest), past a minute when the machine is busy.
 */
const BOOT_TIMEOUT_MS = 150_000;

describe('the services booted from the rendered chart', () => {
  const cleanups = new Cleanups();
  afterEach(() => cleanups.run());

  it('maps the image\'s paths as the Dockerfile lays them out', () => {
    expect(imageWorkdir()).toBe(IMAGE_ROOT);
  });

  it('minimal values: migrations, six services ready, a purchase settled through the gateway, a clean stop', async () => {
    const { db, namespace } = await isolated(cleanups);
    const objects = await render('minimal-values.yaml', {
      'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace, 'config.PAYMENTS_PROVIDER': 'sandbox',
    });
    const booted = await boot(cleanups, objects);
    expect(booted.containers.map((c) => c.run.container).sort()).toEqual(['catalog', 'gateway', 'identity', 'transactions', 'wallet', 'webhooks']);
    // Each service's readiness names its checks; the catalog's sentence encoder is loaded.
    const catalog = booted.containers.find((c) => c.run.container === 'catalog')!;
    expect(await (await fetch(catalog.run.readyUrl!)).text()).toMatch(/"name":"discovery-meaning","ok":true}/);
    await smoke(booted.gateway);
    await stopAll(booted);
  }, BOOT_TIMEOUT_MS);

  it('production values: the platform team\'s Secret with a login key per service, the operator API on', async () => {
    const { db, namespace } = await isolated(cleanups);
    const otel = await collector(cleanups);
    // This machine's NATS is one server: production's three replicas would be refused at start.
    const objects = await render('production-values.yaml', {
      'config.BUS_NAMESPACE': namespace, 'config.PAYMENTS_PROVIDER': 'sandbox', 'config.NATS_REPLICAS': 1,
      'config.OTEL_EXPORTER_OTLP_ENDPOINT': otel.endpoint, 'config.OTEL_TRACES_SAMPLER': 'always_on',
    });
    const adminToken = 'platform-team-operator-token';
    const perService = Object.fromEntries(['IDENTITY', 'CATALOG', 'TRANSACTIONS', 'WALLET', 'WEBHOOKS'].map((s) => [`${s}_DATABASE_URL`, db.url]));
    const booted = await boot(cleanups, objects, { secrets: { 'exchange-secrets': { NATS_URL: TEST_NATS_URL, DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, RECEIPT_SIGNING_KEY: randomBytes(32).toString('base64'), ...perService } } });
    await smoke(booted.gateway);
    const admin = await fetch(`${booted.gateway}/admin/v1/ledger/check`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(admin.status).toBe(200);
    await stopAll(booted);
    // The OTel settings passed through: every service exported its spans under its own name.
    const traces = Buffer.concat(otel.received.filter((r) => r.path === '/v1/traces').map((r) => r.body)).toString('latin1');
    for (const service of ['gateway', 'identity', 'catalog', 'transactions', 'wallet', 'webhooks']) expect(traces).toContain(`agent-exchange-${service}`);
  }, BOOT_TIMEOUT_MS);

  it('development values (tilt up): the services start under node --watch-path and stop cleanly', async () => {
    const { db, namespace } = await isolated(cleanups);
    const objects = await render(join(repoRoot, 'deploy/tilt/dev-values.yaml'), { 'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace });
    const booted = await boot(cleanups, objects);
    expect(booted.containers.every((c) => c.run.argv.includes(`--watch-path=${join(repoRoot, 'services')}`))).toBe(true);
    const health = await fetch(`${booted.gateway}/readyz`);
    expect(health.status).toBe(200);
    await stopAll(booted);
  }, BOOT_TIMEOUT_MS);

  it('a Secret the deployment names but nobody created stops the boot, as CreateContainerConfigError would', async () => {
    const objects = await render('production-values.yaml', {});
    await expect(containersOf(objects, 'Deployment', {})).rejects.toThrow(/Secret exchange-secrets does not exist/);
    await expect(containersOf(objects, 'Deployment', { 'exchange-secrets': { NATS_URL: TEST_NATS_URL, ADMIN_TOKEN: 'x'.repeat(16) } })).rejects.toThrow(/has no key (IDENTITY|CATALOG|TRANSACTIONS|WALLET|WEBHOOKS)_DATABASE_URL/);
  });

  it('a value the schema cannot judge but that breaks the pod fails the boot, naming the workload', async () => {
    const { db, namespace } = await isolated(cleanups);
    const objects = await render('minimal-values.yaml', {
      'nats.url': TEST_NATS_URL, 'postgres.url': db.url, 'config.BUS_NAMESPACE': namespace, 'services.identity.env.NODE_OPTIONS': '--no-such-node-flag',
      'migrations.enabled': false,
    });
    const identity = (await containersOf(objects, 'Deployment')).find((c) => c.container === 'identity')!;
    const running = start(identity);
    cleanups.add(async () => void (running.child.exitCode === null && running.child.kill('SIGKILL')));
    await expect(ready(running, 30_000)).rejects.toThrow(/aex-agent-exchange-identity exited with 9 before it was ready[\s\S]*no-such-node-flag/);
  });
});
