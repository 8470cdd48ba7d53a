import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { ExchangeClient, unwrap, type Outcome } from '@agent-exchange/client';
import { subjects, TRANSACTION_EVENTS_FILTER } from '@aex/contracts';
import { ack, connectBus, freePort } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { exchangeProcess, showLogOnFailure, signingMember, type ExchangeProcess } from './harness.js';
import { INPUT, OUTPUT, serviceBody } from './transaction-kit.js';

// Purchases stream in while the whole exchange (dispatcher included) is killed with
// SIGKILL and, separately, its NATS server is; both come back. At the end every transaction event
// published has exactly one delivery per party — published = delivered + dead + in flight — every
// delivery verifies with the official library, and a receiver saw a webhook-id more than once only
// where an attempt was cut by a kill (the at-least-once contract).

const PURCHASES = 24;

/** A nats-server of this test's own (the shared one cannot be killed), on a fixed port and store. */
function natsServer(port: number, store: string) {
  let child: ChildProcess | undefined;
  return {
    async start() {
      child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: ['ignore', 'ignore', 'pipe'] });
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`nats-server did not start: ${out}`)), 15_000);
        child!.stderr!.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('Server is ready')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
    },
    async kill() {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('webhooks through kills of the exchange and of NATS', () => {
  const received: { id: string; body: string; headers: Record<string, string> }[] = [];
  let hook: http.Server;
  let hookUrl: string;
  let proc: ExchangeProcess;
  showLogOnFailure(() => proc);
  let nats: ReturnType<typeof natsServer>;
  let store: string;
  let url: string;
  let natsUrl: string;

  beforeAll(async () => {
    hook = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ id: String(req.headers['webhook-id']), body, headers: req.headers as Record<string, string> });
        res.end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    store = mkdtempSync(join(tmpdir(), 'aex-chaos-nats-'));
    const port = await freePort();
    natsUrl = `nats://127.0.0.1:${port}`;
    nats = natsServer(port, store);
    await nats.start();
    proc = await exchangeProcess({
      NATS_URL: natsUrl, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,200,400,800,1000,1000,1000,1000',
      WEBHOOK_TIMEOUT_MS: '3000', RATE_LIMIT_WRITE_PER_MIN: '1000000', RATE_LIMIT_READ_PER_MIN: '1000000', RATE_LIMIT_ACCOUNTS_PER_MIN_PER_IP: '100000',
    });
    url = await proc.start();
  }, 120_000);

  afterAll(async () => {
    await proc?.kill();
    await nats?.kill();
    await proc?.db.drop();
    if (store) rmSync(store, { recursive: true, force: true });
    await new Promise((r) => hook?.close(r));
  });

  /** Repeats a keyed request until its outcome is known (across kills, D5.5). */
  const settle = <T>(send: (key: string) => Promise<Outcome<T>>): Promise<Outcome<T>> => {
    const key = randomUUID();
    return eventually(async () => {
      const o = await send(key);
      return [0, 429, 502, 503].includes(o.status) || (!o.ok && o.error.code === 'IDEMPOTENCY_KEY_IN_USE') ? null : o;
    }, 90_000, 100);
  };

  it('loses no delivery and duplicates none beyond the attempts a kill cut', async () => {
    const anon = new ExchangeClient({ baseUrl: url, timeoutMs: 10_000 });
    const consumer = await signingMember(anon, 'consumer');
    const provider = await signingMember(anon, 'provider');
    const as = (m: { apiKey: string; secretKey: string }) => new ExchangeClient({ baseUrl: url, apiKey: m.apiKey, signingSecretKey: m.secretKey, timeoutMs: 10_000 });
    unwrap(await consumer.client.updateAgent(consumer.id, { webhookUrl: hookUrl }));
    unwrap(await provider.client.updateAgent(provider.id, { webhookUrl: hookUrl }));
    unwrap(await consumer.client.fund(consumer.id, 100_000));
    const serviceId = unwrap(await provider.client.createService(serviceBody())).id;

    for (let i = 0; i < PURCHASES; i++) {
      if (i === 8) {
        // The whole exchange, dispatcher included, dies with deliveries under way.
        await proc.kill();
        url = await proc.start();
      }
      if (i === 16) {
        // NATS dies: events wait in the outboxes, the dispatcher's consumer resumes from its stream.
        // It comes back once the exchange has seen it gone (not ready: the bus is not reachable).
        await nats.kill();
        await eventually(async () => (await fetch(`${url}/readyz`)).status === 503, 10_000, 50);
        await nats.start();
      }
      const t = unwrap(await settle((key) => as(consumer).createTransaction({ serviceId, input: INPUT }, { idempotencyKey: key })));
      await eventually(async () => (unwrap(await as(consumer).getTransaction(t.id)).status === 'funds_held' ? true : null), 60_000, 50);
      unwrap(await settle((key) => as(provider).deliver(t.id, { output: OUTPUT }, { idempotencyKey: key })));
      unwrap(await settle((key) => as(consumer).verify(t.id, { qualityScore: 90 }, { idempotencyKey: key })));
    }

    const db = new pg.Client({ connectionString: proc.db.url });
    await db.connect();
    // The transaction events published, read from their stream (the outbox removes a row once JetStream has it).
    const bus = await connectBus({ NATS_URL: natsUrl, BUS_NAMESPACE: proc.namespace, NATS_REPLICAS: 1 }, 'chaos-test', { allowMemory: false });
    const eventIds = new Set<string>();
    const eventConsumer = await bus.consume({
      stream: 'events',
      durable: 'chaos-test-transaction-events',
      filter: subjects.event(proc.namespace, TRANSACTION_EVENTS_FILTER),
      handler: async (msg) => (eventIds.add((msg.data as { id: string }).id), ack()),
    });
    try {
      // Everything published has its deliveries, and none is still on its way.
      const published = async () => eventIds.size;
      const counts = async () => (await db.query(`select status, count(*)::int as n from webhooks.deliveries group by status`)).rows as { status: string; n: number }[];
      await eventually(async () => {
        const [p, c] = [await published(), await counts()];
        const total = c.reduce((s, r) => s + r.n, 0);
        return total === 2 * p && !c.some((r) => r.status === 'pending') ? true : null;
      }, 90_000, 200);
      const events = await published();
      expect(events).toBeGreaterThanOrEqual(PURCHASES * 3);
      const byStatus = Object.fromEntries((await counts()).map((r) => [r.status, r.n]));
      expect(byStatus).toEqual({ delivered: 2 * events });
      // One delivery per event and party.
      const pairs = (await db.query(`select count(distinct (event_id, agent_id))::int as n from webhooks.deliveries`)).rows[0].n;
      expect(pairs).toBe(2 * events);
      const delivered = new Set((await db.query(`select webhook_id from webhooks.deliveries`)).rows.map((r: { webhook_id: string }) => r.webhook_id));
      // The receiver saw every delivery; a webhook-id twice only where a kill cut its attempt.
      const seen = new Set(received.map((r) => r.id));
      expect([...delivered].filter((id) => !seen.has(id))).toEqual([]);
      expect([...seen].filter((id) => !delivered.has(id))).toEqual([]);
      const duplicates = received.length - seen.size;
      expect(duplicates).toBeLessThanOrEqual(8);
      for (const id of seen) expect(new Set(received.filter((r) => r.id === id).map((r) => r.body)).size).toBe(1);
    } finally {
      await eventConsumer.stop();
      await bus.close();
      await db.end();
    }
    // Every delivery verifies with the official library.
    const secrets = new Map<string, string>();
    for (const m of [consumer, provider]) secrets.set(m.id, unwrap(await as(m).getWebhook(m.id)).secret!);
    for (const r of received) {
      const body = JSON.parse(r.body) as { data: { consumerAgentId: string } };
      const verified = [...secrets.values()].some((s) => {
        try {
          new Webhook(s).verify(r.body, r.headers);
          return true;
        } catch {
          return false;
        }
      });
      expect(verified, `${r.id} for ${body.data.consumerAgentId}`).toBe(true);
    }
  }, 300_000);
});
