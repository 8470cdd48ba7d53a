import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { unwrap, verifyWebhook } from '@agent-exchange/client';
import { eventually } from '@aex/platform/testing';
import { expectError, startTestExchange, type Member, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, waitForStatus } from './transaction-kit.js';

// Through the gateway: a purchase's events reach both parties signed as
// Standard Webhooks (each verified with the official `standardwebhooks` library and with the
// client's `verifyWebhook`), and every webhook route — secret, rotation, deliveries, retry, test, the
// operator's dead letters — with its callers: the agent, its owner agent, another agent of the
// account, another account, the anonymous and the operator.

interface Received { headers: Record<string, string>; body: string }

/** A local receiver answering `status()` (200 unless told otherwise). */
async function receiver() {
  const got: Received[] = [];
  let status = 200;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ headers: req.headers as Record<string, string>, body });
      res.statusCode = status;
      res.end();
    });
  });
  server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    setStatus: (s: number) => void (status = s),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

let ex: TestExchange;
const receivers: Receiver[] = [];

beforeAll(async () => {
  ex = await startTestExchange({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_DELAYS_MS: '0,50,50,50,50,50,50,50', WEBHOOK_TIMEOUT_MS: '3000' });
}, 120_000);

afterAll(async () => {
  for (const r of receivers) await r.close();
  await ex?.stop();
});

async function hooked(m: Member): Promise<Receiver> {
  const r = await receiver();
  receivers.push(r);
  unwrap(await m.client.updateAgent(m.agentId, { webhookUrl: r.url }));
  return r;
}

const typesOf = (r: Receiver) => r.got.map((g) => (JSON.parse(g.body) as { type: string }).type);

describe('webhooks of a purchase (D14.1–D14.3)', () => {
  it('sends each status change to both parties, each delivery verifying with the official library and the client', async () => {
    const consumer = await funded(ex, 5000);
    const provider = await party(ex);
    const [cr, pr] = [await hooked(consumer), await hooked(provider)];
    const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    unwrap(await consumer.client.verify(t.id, { qualityScore: 95 }));
    await waitForStatus(consumer, t.id, 'settled');
    await eventually(async () => typesOf(cr).includes('transaction.settled') && typesOf(pr).includes('transaction.settled'), 10_000);
    for (const [m, r] of [[consumer, cr], [provider, pr]] as const) {
      const { secret } = unwrap(await m.client.getWebhook(m.agentId));
      for (const g of r.got) {
        const viaLibrary = new Webhook(secret!).verify(g.body, g.headers) as { data: { transactionId: string } };
        expect(verifyWebhook(g.headers, g.body, secret!)).toEqual(viaLibrary);
        expect(viaLibrary.data.transactionId).toBe(t.id);
      }
      expect(typesOf(r)).toEqual(expect.arrayContaining(['transaction.funds_held', 'transaction.delivered', 'transaction.settled']));
      const settled = JSON.parse(r.got.find((g) => g.body.includes('"transaction.settled"'))!.body);
      expect(settled).toEqual({
        type: 'transaction.settled', timestamp: expect.any(String),
        data: {
          transactionId: t.id, status: 'settled', previousStatus: 'delivered', statusReason: null, consumerAgentId: consumer.agentId,
          providerAgentId: provider.agentId, serviceId, agreedPriceCents: 1000, platformFeeCents: 50, receipt: unwrap(await consumer.client.receipt(t.id)).receipt,
        },
      });
    }
    // The delivery log shows each, delivered at the first attempt.
    const log = unwrap(await consumer.client.webhookDeliveries(consumer.agentId, { status: 'delivered', limit: 100 }));
    expect(log.length).toBe(cr.got.length);
    expect(log.every((d) => d.attempts.length === 1 && d.attempts[0]!.statusCode === 200)).toBe(true);
    expect(new Set(log.map((d) => d.webhookId))).toEqual(new Set(cr.got.map((g) => g.headers['webhook-id'])));
  });
});

describe('GET /v1/agents/{id}/webhook and the secret (D14.2)', () => {
  it('shows the URL and secret to the agent and its owner, no one else', async () => {
    const m = await party(ex);
    const r = await hooked(m);
    const own = unwrap(await m.client.getWebhook(m.agentId));
    expect(own).toEqual({ agentId: m.agentId, url: r.url, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/), previousSecretExpiresAt: null, secretCreatedAt: expect.any(String) });
    expect(unwrap(await m.owner.client.getWebhook(m.agentId))).toEqual(own);
    const sibling = await ex.addAgent(m.owner);
    const stranger = await party(ex);
    expectError(await sibling.client.getWebhook(m.agentId), 403, 'FORBIDDEN');
    // D24.5: another account's agent's webhooks are not its to see: as if the agent did not exist.
    expectError(await stranger.client.getWebhook(m.agentId), 404, 'NOT_FOUND');
    expectError(await stranger.owner.client.getWebhook(m.agentId), 404, 'NOT_FOUND');
    expectError(await ex.anon.getWebhook(m.agentId), 401, 'UNAUTHENTICATED');
    expectError(await m.client.getWebhook(randomUUID()), 404, 'NOT_FOUND');
    expectError(await m.client.getWebhook('nope'), 400, 'VALIDATION_ERROR');
  });

  it('has no secret before the agent has a URL', async () => {
    const m = await party(ex);
    expect(unwrap(await m.client.getWebhook(m.agentId))).toMatchObject({ url: null, secret: null });
    expectError(await m.client.rotateWebhookSecret(m.agentId), 409, 'INVALID_STATE');
    expectError(await m.client.testWebhook(m.agentId), 409, 'INVALID_STATE');
  });

  it('rotates: the new secret signs at once and the old one too for 24 h (two signatures)', async () => {
    const m = await party(ex);
    const r = await hooked(m);
    const before = unwrap(await m.client.getWebhook(m.agentId));
    const expectError403 = async () => expectError(await (await ex.addAgent(m.owner)).client.rotateWebhookSecret(m.agentId), 403, 'FORBIDDEN');
    await expectError403();
    const rotated = unwrap(await m.client.rotateWebhookSecret(m.agentId));
    expect(rotated.secret).not.toBe(before.secret);
    const overlap = Date.parse(rotated.previousSecretExpiresAt!) - Date.now();
    expect(overlap).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    const test = unwrap(await m.client.testWebhook(m.agentId));
    expect(test.delivered).toBe(true);
    const g = r.got.at(-1)!;
    expect(g.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const s of [before.secret!, rotated.secret!]) expect(new Webhook(s).verify(g.body, g.headers)).toMatchObject({ type: 'webhook.test' });
    // The owner may rotate too.
    unwrap(await m.owner.client.rotateWebhookSecret(m.agentId));
  });
});

describe('POST /v1/agents/{id}/webhook/test', () => {
  it('sends a signed webhook.test and reports the receiver’s answer, good or bad, in the log too', async () => {
    const m = await party(ex);
    const r = await hooked(m);
    const ok = unwrap(await m.client.testWebhook(m.agentId));
    expect(ok).toMatchObject({ webhookId: expect.stringMatching(/^msg_/), delivered: true, attempt: { attempt: 1, statusCode: 200, errorClass: null, url: r.url } });
    const { secret } = unwrap(await m.client.getWebhook(m.agentId));
    expect(new Webhook(secret!).verify(r.got.at(-1)!.body, r.got.at(-1)!.headers)).toMatchObject({ type: 'webhook.test', data: { agentId: m.agentId } });
    r.setStatus(500);
    const bad = unwrap(await m.owner.client.testWebhook(m.agentId));
    expect(bad).toMatchObject({ delivered: false, attempt: { statusCode: 500, errorClass: 'http_status' } });
    // A failed test is not retried: it is dead at once, listed and retryable like any delivery.
    const dead = unwrap(await m.client.webhookDeliveries(m.agentId, { status: 'dead' }));
    expect(dead.map((d) => d.webhookId)).toEqual([bad.webhookId]);
    expectError(await (await party(ex)).client.testWebhook(m.agentId), 404, 'NOT_FOUND');
    expectError(await ex.anon.testWebhook(m.agentId), 401, 'UNAUTHENTICATED');
  });
});

describe('dead letters and retries (D14.4, D15.3)', () => {
  async function deadDelivery() {
    const consumer = await funded(ex, 5000);
    const provider = await party(ex);
    const r = await hooked(consumer);
    r.setStatus(503);
    const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
    await createHeld(consumer, { serviceId, input: INPUT });
    const [dead] = await eventually(async () => {
      const rows = unwrap(await consumer.client.webhookDeliveries(consumer.agentId, { status: 'dead' }));
      return rows.length > 0 ? rows : null;
    }, 15_000, 100);
    return { consumer, r, dead: dead! };
  }

  it('lists a delivery dead after 8 attempts, and the agent’s retry delivers it with the same webhook-id', async () => {
    const { consumer, r, dead } = await deadDelivery();
    expect(dead.attempts.map((a) => a.statusCode)).toEqual(Array(8).fill(503));
    expect(dead.nextAttemptAt).toBeNull();
    expectError(await (await ex.addAgent(consumer.owner)).client.retryWebhookDelivery(consumer.agentId, dead.webhookId), 403, 'FORBIDDEN');
    expectError(await consumer.client.retryWebhookDelivery(consumer.agentId, `msg_${'0'.repeat(32)}`), 404, 'NOT_FOUND');
    r.setStatus(200);
    // The purchase's other events may still be on their own schedules: only the retry carries this id.
    const before = r.got.length;
    const retried = unwrap(await consumer.client.retryWebhookDelivery(consumer.agentId, dead.webhookId));
    expect(retried).toMatchObject({ webhookId: dead.webhookId, status: 'pending' });
    await eventually(async () => unwrap(await consumer.client.webhookDeliveries(consumer.agentId, { status: 'delivered' })).some((d) => d.webhookId === dead.webhookId) || null, 10_000, 50);
    expect(r.got.slice(before).filter((g) => g.headers['webhook-id'] === dead.webhookId)).toHaveLength(1);
    expectError(await consumer.client.retryWebhookDelivery(consumer.agentId, dead.webhookId), 409, 'INVALID_STATE');
  });

  it('lets the operator list dead letters and retry one, recorded in the audit log; nobody else', async () => {
    const { consumer, r, dead } = await deadDelivery();
    const listed = unwrap(await ex.admin.webhookDeadLetters({ limit: 100 }));
    expect(listed.find((d) => d.webhookId === dead.webhookId)).toMatchObject({ agentId: consumer.agentId, status: 'dead' });
    expectError(await consumer.client.webhookDeadLetters(), 401, 'UNAUTHENTICATED');
    expectError(await consumer.client.retryDeadLetter(dead.webhookId), 401, 'UNAUTHENTICATED');
    r.setStatus(204);
    unwrap(await ex.admin.retryDeadLetter(dead.webhookId));
    await eventually(async () => unwrap(await consumer.client.webhookDeliveries(consumer.agentId, { status: 'delivered' })).some((d) => d.webhookId === dead.webhookId) || null, 10_000, 50);
    await expect.poll(async () => unwrap(await ex.admin.operatorActions({ limit: 100 })).find((a) => a.target?.id === dead.webhookId), { timeout: 10_000, interval: 50 }).toMatchObject({
      action: 'webhook.retry', service: 'webhooks', target: { type: 'webhook_delivery', id: dead.webhookId }, details: { agentId: consumer.agentId },
    });
    expectError(await ex.admin.retryDeadLetter(`msg_${'1'.repeat(32)}`), 404, 'NOT_FOUND');
  });
});
