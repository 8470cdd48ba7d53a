import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { ExchangeClient, unwrap } from '@agent-exchange/client';
import { createTestBus, createTestDatabase, eventually, testNamespace, type TestDatabase } from '@aex/platform/testing';
import { containersOf, ready, start, terminate, type Launcher, type RunningContainer } from '../deploy/boot.js';
import type { KubeObject } from '../deploy/helm.js';
import { signingMember } from './harness.js';

// Shared by kubernetes.test.ts (the rendered chart as local processes) and image.test.ts (the
// rendered chart in the built image): render, boot, use through the gateway, stop.

/** What a test undoes at its end, last first. */
export class Cleanups {
  private readonly steps: (() => Promise<void>)[] = [];
  add(step: () => Promise<void>): void {
    this.steps.push(step);
  }
  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) await step();
  }
}

export interface Booted {
  containers: RunningContainer[];
  gateway: string;
}

/** A database and a NATS namespace of the test's own, removed at its end. */
export async function isolated(cleanups: Cleanups): Promise<{ db: TestDatabase; namespace: string }> {
  const db = await createTestDatabase();
  const namespace = testNamespace();
  cleanups.add(async () => {
    const { dispose } = await createTestBus('jetstream', namespace);
    await dispose();
    await db.drop();
  });
  return { db, namespace };
}

/** The Job first (every container must exit 0), then every Deployment until its readiness probe passes. */
export async function boot(cleanups: Cleanups, objects: KubeObject[], opts: { secrets?: Record<string, Record<string, string>>; launch?: Launcher } = {}): Promise<Booted> {
  for (const job of (await containersOf(objects, 'Job', opts.secrets)).map((r) => start(r, opts.launch))) {
    const code = await job.exited;
    expect(code, `${job.run.container} migrations:\n${job.output()}`).toBe(0);
    expect(job.output()).toMatch(new RegExp(`${job.run.container} migrations done`));
  }
  const containers = (await containersOf(objects, 'Deployment', opts.secrets)).map((r) => start(r, opts.launch));
  cleanups.add(async () => {
    for (const c of containers) if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await Promise.all(containers.map((c) => c.exited));
  });
  await Promise.all(containers.map((c) => ready(c)));
  const gateway = containers.find((c) => c.run.container === 'gateway')!;
  return { containers, gateway: `http://127.0.0.1:${gateway.run.ports.http}` };
}

/** A purchase through the gateway touches every service: sign-up, funding, a listing, discovery, hold, settle. */
export async function smoke(gateway: string): Promise<void> {
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
  expect(unwrap(await provider.client.deliver(created.id, { output: { text: 'hi' } })).status).toBe('delivered');
  expect(unwrap(await consumer.client.verify(created.id)).status).toBe('settled');
  expect(unwrap(await provider.client.getWallet(provider.id)).balanceCents).toBe(665);
  // The webhook service answers for the agent (no URL set: nothing to sign yet).
  expect(unwrap(await consumer.client.getWebhook(consumer.id))).toMatchObject({ agentId: consumer.id, url: null, secret: null });
}

/** SIGTERM to all: each exits 0 within its grace period, having logged no warning or error (JSON logs). */
export async function stopAll(booted: Booted): Promise<void> {
  const codes = await Promise.all(booted.containers.map(async (c) => [c.run.container, await terminate(c)] as const));
  expect(Object.fromEntries(codes)).toEqual(Object.fromEntries(booted.containers.map((c) => [c.run.container, 0])));
  for (const c of booted.containers) {
    const lines = c.output().split('\n').filter(Boolean);
    expect(lines.filter((l) => !l.startsWith('{')), `${c.run.container}: every line is JSON (LOG_FORMAT json)`).toEqual([]);
    expect(lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40), c.run.container).toEqual([]);
  }
}

/** An OTLP/HTTP collector stand-in: what each export request carried, by path. */
export async function collector(cleanups: Cleanups): Promise<{ endpoint: string; received: { path: string; body: Buffer }[] }> {
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
  cleanups.add(() => new Promise((r) => server.close(() => r())));
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}
