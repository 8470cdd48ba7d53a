import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { events, subjects, transactionEvent, webhooksOps, type MessageDef, type Static } from '@aex/contracts';
import { callOrThrow, loadConfig, type Bus } from '@aex/platform';
import { createTestBus, createTestDatabase, eventually, testLogger } from '@aex/platform/testing';
import { startWebhookService, type WebhookService } from '../src/index.js';
import type { DispatcherOptions } from '../src/deliveries/dispatcher.js';
import { WebhookSender } from '../src/deliveries/sender.js';

// On real Postgres, JetStream and local receivers: transaction events become one
// delivery per party endpoint, signed as Standard Webhooks (checked with the official library),
// retried on the D14.4 schedule (scaled down), dead-lettered after the 8th failure and retried by
// the operator with the same webhook-id; redirects not followed, answers read only so far, slow and
// dead endpoints kept from holding up healthy ones, private addresses refused at connect time.

interface Received { headers: http.IncomingHttpHeaders; body: string; at: number }
type Behaviour = (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void;

/** A local receiver whose answer to the n-th request (1-based) is `behave`'s. */
async function receiver(behave: Behaviour = (_q, res) => res.end('ok')) {
  const got: Received[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ headers: req.headers, body, at: Date.now() });
      behave(req, res, got.length);
    });
  });
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url, got,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A dispatcher of its own: database, JetStream namespace and service. */
async function startDispatcher(env: Record<string, string>, dispatcher: DispatcherOptions) {
  const database = await createTestDatabase();
  const { bus, dispose } = await createTestBus('jetstream');
  const config = loadConfig({}, { BUS_NAMESPACE: bus.namespace, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env });
  const service = await startWebhookService({ bus, databaseUrl: database.url, config, logger: testLogger(), dispatcher });
  return {
    bus, service,
    async stop() {
      await service.stop();
      await dispose();
      await database.drop();
    },
  };
}
type Exchange = Awaited<ReturnType<typeof startDispatcher>>;

let main: Exchange;
let bus: Bus;
let service: WebhookService;
const receivers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  main = await startDispatcher({ WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50' }, { pollMs: 50 });
  ({ bus, service } = main);
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await main?.stop();
});

async function publish<M extends MessageDef>(def: M, data: Static<M['data']>, id: string = randomUUID(), msgId: string = id, on: Exchange = main): Promise<string> {
  await on.bus.publish(subjects.event(on.bus.namespace, def.type), { id, type: def.type, occurredAt: new Date().toISOString(), data }, { msgId });
  return id;
}

/** An agent whose webhooks go to `url`, known to the dispatcher's replica, with its secret. */
async function agentAt(url: string, on: Exchange = main): Promise<{ agentId: string; secret: string }> {
  const agentId = randomUUID();
  await publish(events.agentCreated, { agentId, accountId: randomUUID(), name: 'a', status: 'active', parentAgentId: null, webhookUrl: url, trustScore: 50 }, undefined, undefined, on);
  const row = await eventually(() => on.service.deps.db.selectFrom('secrets').select('secret').where('agentId', '=', agentId).executeTakeFirst());
  return { agentId, secret: row.secret };
}

const txData = (consumer: string, provider: string) => ({
  transactionId: randomUUID(), status: 'settled' as const, previousStatus: 'delivered' as const, statusReason: null,
  consumerAgentId: consumer, providerAgentId: provider, serviceId: randomUUID(), agreedPriceCents: 1000, platformFeeCents: 50,
});

const deliveriesOf = (agentId: string) => service.deps.db.selectFrom('deliveries').selectAll().where('agentId', '=', agentId).execute();
const attemptsOf = (webhookId: string) => service.deps.db.selectFrom('attempts').selectAll().where('webhookId', '=', webhookId).orderBy('attempt').execute();
const statusOf = async (agentId: string) => (await deliveriesOf(agentId)).map((d) => d.status);

describe('deliveries', () => {
  it('delivers each transaction event once to each party, signed so the official library verifies it', async () => {
    const [a, b] = [await receiver(), await receiver()];
    receivers.push(a, b);
    const [consumer, provider] = [await agentAt(a.url), await agentAt(b.url)];
    const data = txData(consumer.agentId, provider.agentId);
    const id = await publish(transactionEvent('settled'), data);
    // The same event again (a redelivery): no second delivery.
    await publish(transactionEvent('settled'), data, id, randomUUID());
    await eventually(async () => a.got.length >= 1 && b.got.length >= 1);
    // A second delivery must not come: nothing to await for it, so its time is waited out.
    await new Promise((r) => setTimeout(r, 300));
    expect([a.got.length, b.got.length]).toEqual([1, 1]);
    for (const [r, who] of [[a, consumer], [b, provider]] as const) {
      const msg = r.got[0]!;
      const payload = new Webhook(who.secret).verify(msg.body, msg.headers as Record<string, string>);
      expect(payload).toEqual({ type: 'transaction.settled', timestamp: expect.any(String), data });
      expect(msg.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(msg.headers['content-type']).toBe('application/json');
    }
    expect(a.got[0]!.headers['webhook-id']).not.toBe(b.got[0]!.headers['webhook-id']);
    expect(await statusOf(consumer.agentId)).toEqual(['delivered']);
  });

  it('sends a fresh delivery whose endpoint has a free place as it is written, with no claim round', async () => {
    const r = await receiver();
    receivers.push(r);
    const agent = await agentAt(r.url);
    const before = { ...service.dispatcher.counts };
    await publish(transactionEvent('funds_held'), { ...txData(agent.agentId, randomUUID()), status: 'funds_held' });
    await eventually(async () => (await statusOf(agent.agentId))[0] === 'delivered');
    expect(service.dispatcher.counts.handedOff - before.handedOff).toBe(1);
  });

  it('makes no delivery for a party without a webhook URL', async () => {
    const a = await receiver();
    receivers.push(a);
    const consumer = await agentAt(a.url);
    const silent = randomUUID();
    await publish(events.agentCreated, { agentId: silent, accountId: randomUUID(), name: 's', status: 'active', parentAgentId: null, webhookUrl: null, trustScore: 50 });
    await publish(transactionEvent('funds_held'), { ...txData(consumer.agentId, silent), status: 'funds_held' });
    await eventually(async () => a.got.length >= 1);
    expect(await deliveriesOf(silent)).toEqual([]);
  });

  it('retries on failure with the same webhook-id and a fresh timestamp, until a 2xx', async () => {
    const r = await receiver((_q, res, n) => {
      res.statusCode = n <= 2 ? 503 : 204;
      res.end(n <= 2 ? 'busy' : '');
    });
    receivers.push(r);
    const agent = await agentAt(r.url);
    await publish(transactionEvent('executing'), { ...txData(agent.agentId, randomUUID()), status: 'executing' });
    await eventually(async () => (await statusOf(agent.agentId))[0] === 'delivered', 10_000);
    expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    for (const g of r.got) new Webhook(agent.secret).verify(g.body, g.headers as Record<string, string>);
    const [d] = await deliveriesOf(agent.agentId);
    const attempts = await attemptsOf(d!.webhookId);
    expect(attempts.map((a) => [a.attempt, a.statusCode, a.errorClass])).toEqual([[1, 503, 'http_status'], [2, 503, 'http_status'], [3, 204, null]]);
    expect(attempts[0]!.responseExcerpt).toBe('busy');
    expect(attempts.every((a) => a.address === '127.0.0.1' && a.url === r.url)).toBe(true);
  });

  it('dead-letters after the 8th failure, and the operator’s retry delivers it with the same webhook-id', async () => {
    let healthy = false;
    const r = await receiver((_q, res) => {
      res.statusCode = healthy ? 200 : 500;
      res.end();
    });
    receivers.push(r);
    const agent = await agentAt(r.url);
    await publish(transactionEvent('failed'), { ...txData(agent.agentId, randomUUID()), status: 'failed' });
    await eventually(async () => (await statusOf(agent.agentId))[0] === 'dead', 15_000);
    expect(r.got).toHaveLength(8);
    const [d] = await deliveriesOf(agent.agentId);
    const dead = await callOrThrow(bus, webhooksOps.listDeadLetters, { ctx: { requestId: randomUUID(), principal: null, admin: true }, input: { path: {}, query: { limit: 100 }, body: {} } }, 5000);
    expect(dead.find((x) => x.webhookId === d!.webhookId)).toMatchObject({ status: 'dead', attempts: expect.any(Array), nextAttemptAt: null });
    healthy = true;
    const retried = await callOrThrow(bus, webhooksOps.retryDeadLetter, { ctx: { requestId: randomUUID(), principal: null, admin: true }, input: { path: { webhookId: d!.webhookId }, query: {}, body: {} } }, 5000);
    expect(retried.status).toBe('pending');
    await eventually(async () => (await statusOf(agent.agentId))[0] === 'delivered', 10_000);
    expect(r.got).toHaveLength(9);
    expect(new Set(r.got.map((g) => g.headers['webhook-id']))).toEqual(new Set([d!.webhookId]));
    // A delivered one is not retried again.
    await expect(callOrThrow(bus, webhooksOps.retryDeadLetter, { ctx: { requestId: randomUUID(), principal: null, admin: true }, input: { path: { webhookId: d!.webhookId }, query: {}, body: {} } }, 5000)).rejects.toThrow(/Only a dead-lettered/);
  });

  it('never follows a redirect: a 3xx is a failure and its target hears nothing', async () => {
    const target = await receiver();
    const r = await receiver((_q, res) => {
      res.statusCode = 307;
      res.setHeader('location', target.url);
      res.end();
    });
    receivers.push(target, r);
    const agent = await agentAt(r.url);
    await publish(transactionEvent('cancelled'), { ...txData(agent.agentId, randomUUID()), status: 'cancelled' });
    await eventually(async () => r.got.length >= 2, 10_000);
    expect(target.got).toEqual([]);
    const [d] = await deliveriesOf(agent.agentId);
    expect((await attemptsOf(d!.webhookId))[0]).toMatchObject({ statusCode: 307, errorClass: 'http_status', error: expect.stringMatching(/redirects are not followed/) });
  });

  it('reads a huge answer only as far as its excerpt, and a slow answer within the timeout succeeds', async () => {
    const huge = await receiver((_q, res) => {
      res.statusCode = 200;
      const chunk = 'x'.repeat(64 * 1024);
      let sent = 0;
      const more = () => {
        while (sent < 32 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    const slow = await receiver((_q, res) => setTimeout(() => res.end('late but fine'), 600));
    receivers.push(huge, slow);
    const [h, s] = [await agentAt(huge.url), await agentAt(slow.url)];
    await publish(transactionEvent('delivered'), { ...txData(h.agentId, s.agentId), status: 'delivered' });
    await eventually(async () => (await statusOf(h.agentId))[0] === 'delivered' && (await statusOf(s.agentId))[0] === 'delivered', 10_000);
    const [hd] = await deliveriesOf(h.agentId);
    const [ha] = await attemptsOf(hd!.webhookId);
    expect(ha!.responseExcerpt!.length).toBeLessThanOrEqual(1024);
    const [sd] = await deliveriesOf(s.agentId);
    const [sa] = await attemptsOf(sd!.webhookId);
    expect(sa).toMatchObject({ statusCode: 200, responseExcerpt: 'late but fine' });
    expect(sa!.latencyMs).toBeGreaterThanOrEqual(550);
  });

  it('times out an endpoint that never answers', async () => {
    const mute = await receiver(() => undefined);
    receivers.push(mute);
    const agent = await agentAt(mute.url);
    await publish(transactionEvent('expired'), { ...txData(agent.agentId, randomUUID()), status: 'expired' });
    const [d] = await eventually(async () => {
      const rows = await deliveriesOf(agent.agentId);
      return rows.length && (await attemptsOf(rows[0]!.webhookId)).length > 0 ? rows : null;
    }, 15_000);
    expect((await attemptsOf(d!.webhookId))[0]).toMatchObject({ errorClass: 'timeout', statusCode: null });
  });
});

describe('isolation', () => {
  it('keeps a dead endpoint from holding up a healthy one: the healthy deliveries arrive while the dead one’s attempts still hang', async () => {
    const dead = await receiver(() => undefined);
    const healthy = await receiver();
    receivers.push(dead, healthy);
    const [d, h] = [await agentAt(dead.url), await agentAt(healthy.url)];
    // The dead endpoint's burst first, so its deliveries are the oldest due.
    for (let i = 0; i < 40; i++) await publish(transactionEvent('funds_held'), { ...txData(d.agentId, randomUUID()), status: 'funds_held' });
    await eventually(async () => dead.got.length >= 1);
    for (let i = 0; i < 20; i++) await publish(transactionEvent('funds_held'), { ...txData(h.agentId, randomUUID()), status: 'funds_held' });
    await eventually(async () => (await statusOf(h.agentId)).filter((s) => s === 'delivered').length === 20, 10_000);
    // The dead endpoint has taken only its own places (4 at a time), and none of them has ended yet.
    expect(dead.got.length).toBeLessThanOrEqual(4);
    const attempted = await service.deps.db.selectFrom('attempts').innerJoin('deliveries', 'deliveries.webhookId', 'attempts.webhookId').select('attempts.attempt').where('deliveries.agentId', '=', d.agentId).execute();
    expect(attempted).toEqual([]);
    await dead.close();
  }, 30_000);
});

describe('a stuck endpoint', () => {
  it('gives its freed places to its own oldest deliveries, never more than 4 at once, and drains its backlog once it answers again', async () => {
    const stuck = await startDispatcher({ WEBHOOK_TIMEOUT_MS: '1500', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50' }, { pollMs: 50 });
    try {
      let answering = false;
      let open = 0;
      let most = 0;
      const r = await receiver((_q, res) => {
        if (!answering) {
          most = Math.max(most, ++open);
          res.on('close', () => open--);
          return;
        }
        res.end('ok');
      });
      receivers.push(r);
      const agent = await agentAt(r.url, stuck);
      await Promise.all(Array.from({ length: 12 }, () => publish(transactionEvent('funds_held'), { ...txData(agent.agentId, randomUUID()), status: 'funds_held' }, undefined, undefined, stuck)));
      await eventually(async () => r.got.length === 4);
      // After a second with every place taken, the rest is put off, its due time kept.
      await eventually(async () => {
        const rows = await stuck.service.deps.db.selectFrom('deliveries').select('deferredFrom').where('agentId', '=', agent.agentId).where('deferredFrom', 'is not', null).execute();
        return rows.length === 8 || null;
      }, 5000);
      const first = new Set(r.got.map((g) => g.headers['webhook-id']));
      // The first four time out; their places go to four of the put-off ones (due before the retries).
      await eventually(async () => r.got.length >= 8, 10_000);
      expect(r.got.slice(4, 8).filter((g) => first.has(g.headers['webhook-id']))).toEqual([]);
      // The four still waiting stay put off: the backlog is never made due all at once.
      const waiting = await stuck.service.deps.db.selectFrom('deliveries').select('deferredFrom')
        .where('agentId', '=', agent.agentId).where('attemptCount', '=', 0).where('claimedUntil', 'is', null).execute();
      expect(waiting.map((w) => w.deferredFrom !== null)).toEqual([true, true, true, true]);
      answering = true;
      await eventually(async () => {
        const rows = await stuck.service.deps.db.selectFrom('deliveries').select('status').where('agentId', '=', agent.agentId).execute();
        return rows.length === 12 && rows.every((x) => x.status === 'delivered');
      }, 15_000);
      expect(most).toBeLessThanOrEqual(4);
      expect(new Set(r.got.map((g) => g.headers['webhook-id'])).size).toBe(12);
    } finally {
      await stuck.stop();
    }
  }, 40_000);
});

describe('hand-off from the intake to the dispatcher', () => {
  it('sends fresh deliveries as they are written, with no poll: one place per endpoint, a burst goes out one at a time and all of it arrives', async () => {
    const quiet = await startDispatcher({ WEBHOOK_TIMEOUT_MS: '3000' }, { pollMs: 3_600_000, perEndpoint: 1 });
    try {
      let open = 0;
      let most = 0;
      // The first answer takes long enough for the whole burst to be written meanwhile.
      const slow = await receiver((_q, res, n) => {
        most = Math.max(most, ++open);
        setTimeout(() => (open--, res.end('ok')), n === 1 ? 300 : 20);
      });
      receivers.push(slow);
      const agent = await agentAt(slow.url, quiet);
      await Promise.all(Array.from({ length: 8 }, () => publish(transactionEvent('funds_held'), { ...txData(agent.agentId, randomUUID()), status: 'funds_held' }, undefined, undefined, quiet)));
      // No poll runs within the test: the first goes out as it is written, each later one when the
      // endpoint's place comes free.
      await eventually(async () => slow.got.length === 8, 10_000);
      expect(most).toBe(1);
      expect(quiet.service.dispatcher.counts).toEqual({ handedOff: 1, claimed: 7 });
      expect(new Set(slow.got.map((g) => g.headers['webhook-id'])).size).toBe(8);
      for (const g of slow.got) new Webhook(agent.secret).verify(g.body, g.headers as Record<string, string>);
      // Each recorded delivered, its claim let go.
      const recorded = async () => (await quiet.service.deps.db.selectFrom('deliveries').select(['status', 'claimedUntil']).where('agentId', '=', agent.agentId).execute())
        .map((r) => [r.status, r.claimedUntil]);
      await expect.poll(recorded, { timeout: 5000 }).toEqual(Array.from({ length: 8 }, () => ['delivered', null]));
    } finally {
      await quiet.stop();
    }
  }, 30_000);

  it('does not send a first attempt that D14.4 schedules later before it is due', async () => {
    const later = await startDispatcher({ WEBHOOK_RETRY_DELAYS_MS: '400,50,50,50,50,50,50,50' }, { pollMs: 50 });
    try {
      const r = await receiver();
      receivers.push(r);
      const agent = await agentAt(r.url, later);
      const sent = Date.now();
      await publish(transactionEvent('funds_held'), { ...txData(agent.agentId, randomUUID()), status: 'funds_held' }, undefined, undefined, later);
      await eventually(async () => r.got.length === 1, 10_000);
      expect(r.got[0]!.at - sent).toBeGreaterThanOrEqual(400);
      expect(later.service.dispatcher.counts).toEqual({ handedOff: 0, claimed: 1 });
    } finally {
      await later.stop();
    }
  });
});

describe('connect-time address checks (D14.5)', () => {
  const strict = new WebhookSender({ timeoutMs: 2000, allowPrivateNetworks: false });
  afterAll(() => strict.close());

  it('refuses plain http, an IP literal of a private block, and a name that resolves to loopback now', async () => {
    const r = await receiver();
    receivers.push(r);
    const port = new URL(r.url).port;
    const cases = [
      [r.url, 'refused_address', /https/],
      [`https://127.0.0.1:${port}/hook`, 'refused_address', /loopback/],
      [`https://[::1]:${port}/hook`, 'refused_address', /loopback/],
      [`https://10.1.2.3:${port}/hook`, 'refused_address', /private/],
      [`https://169.254.169.254/latest/meta-data`, 'refused_address', /link-local/],
      // A name is checked against the address its lookup gives on this attempt.
      [`https://localhost:${port}/hook`, 'refused_address', /loopback/],
    ] as const;
    for (const [url, errorClass, error] of cases) {
      const got = await strict.post(url, {}, '{}');
      expect({ url, ok: got.ok, errorClass: got.errorClass }).toEqual({ url, ok: false, errorClass });
      expect(got.error).toMatch(error);
    }
    expect(r.got).toEqual([]);
  });
});
