import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { serveHealth, createLogger } from '@aex/platform';
import { eventually } from '@aex/platform/testing';
import { exchangeTest } from './fixtures.js';
import { startTestExchange } from './harness.js';
import { OUTPUT, waitForStatus, webhookUrlKnown } from './transaction-kit.js';
import { parseExposition, samplesOf, type Exposition } from '../prometheus-text.js';

// /metrics (docs/metrics.md): after purchases — one verified, one settled by its review window's
// timer, a webhook delivered — the gateway's exposition parses as Prometheus text, has every metric
// the Helm chart's Grafana dashboard queries, and counts what happened. With METRICS_TOKEN, only its
// bearer reads it; a service's health port serves the same.

const it = exchangeTest({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', REVIEW_WINDOW_SECONDS: '1' }, { timerPollMs: 100 });
const DASHBOARD = new URL('../../deploy/helm/agent-exchange/dashboards/agent-exchange.json', import.meta.url);

async function scrape(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const r = await fetch(`${url}/metrics`, { headers });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
}

/** The metric names the shipped dashboard's queries use (a histogram's by its base name). */
function dashboardMetrics(e: Exposition): string[] {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
  const names = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/aex_[a-z_]+/g) ?? []));
  return [...new Set(names.map((n) => (e.types.get(n.replace(/_(bucket|sum|count)$/, '')) === 'histogram' ? n.replace(/_(bucket|sum|count)$/, '') : n)))].sort();
}

describe('/metrics', () => {
  it('after purchases, parses as Prometheus text with every metric the dashboard queries, counting what happened', async ({ exchange, provider, consumer, trade, delivered }) => {
    // A webhook to deliver, a verify, and a settlement by the review window's timer.
    const got: string[] = [];
    const hook = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        got.push(req.url ?? '');
        res.end();
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    try {
      unwrap(await provider.client.updateAgent(provider.agentId, { webhookUrl: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook` }));
      await webhookUrlKnown(provider.client, provider.agentId);
      got.length = 0;
      const second = unwrap(await consumer.client.createTransaction({ serviceId: trade.serviceId, input: trade.input }));
      unwrap(await provider.client.deliver(second.id, { output: OUTPUT }));
      expect(unwrap(await consumer.client.verify(second.id)).status).toBe('settled');
      await waitForStatus(consumer, delivered.id, 'settled');
      await eventually(async () => got.length > 0 || null, 10_000);
    } finally {
      hook.closeAllConnections();
      await new Promise((r) => hook.close(r));
    }

    // The money figures are read at most every 10 s: the scrape that counts both settlements is awaited.
    const e = await eventually(async () => {
      const r = await scrape(exchange.url);
      expect(r.status).toBe(200);
      expect(r.type).toBe('text/plain; version=0.0.4; charset=utf-8');
      const parsed = parseExposition(r.text);
      return (samplesOf(parsed, 'aex_money_settled_cents_total')[0]?.value ?? 0) >= 2000 ? parsed : null;
    }, 15_000, 250);

    const names = dashboardMetrics(e);
    expect(names.length).toBeGreaterThanOrEqual(14);
    for (const name of names) expect(e.samples.some((s) => s.name === name || s.name.startsWith(`${name}_`)), `${name} has samples`).toBe(true);

    const count = (name: string, labels: Record<string, string>) => samplesOf(e, name, labels).reduce((n, s) => n + s.value, 0);
    expect(count('aex_http_requests_total', { route: '/v1/transactions', method: 'POST', status: '201' })).toBeGreaterThanOrEqual(2);
    expect(count('aex_http_request_duration_seconds_count', { route: '/v1/transactions/:transactionId/verify', method: 'POST' })).toBeGreaterThanOrEqual(1);
    expect(count('aex_http_requests_total', { route: 'unmatched' })).toBe(0);
    expect(count('aex_saga_step_seconds_count', { consumer: 'transactions-hold-placed' })).toBeGreaterThanOrEqual(2);
    expect(count('aex_messages_processed_total', { outcome: 'applied' })).toBeGreaterThan(0);
    expect(count('aex_events_published_total', { type: 'transactions.transaction.settled' })).toBeGreaterThanOrEqual(2);
    expect(count('aex_webhook_attempts_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(count('aex_timers_fired_total', { service: 'transactions', kind: 'review_window' })).toBeGreaterThanOrEqual(1);
    expect(samplesOf(e, 'aex_timers_due', { service: 'transactions' })).toHaveLength(1);
    expect(samplesOf(e, 'aex_outbox_pending', { service: 'wallet' })).toHaveLength(1);
    expect(samplesOf(e, 'aex_jetstream_consumer_pending', { consumer: 'transactions-hold-placed' })).toHaveLength(1);
    // Exchange-wide money, from the ledger: both purchases settled (1,000 each, 50 in fees each), nothing held.
    expect(samplesOf(e, 'aex_money_settled_cents_total')[0]!.value).toBeGreaterThanOrEqual(2000);
    expect(samplesOf(e, 'aex_platform_fees_cents_total')[0]!.value).toBeGreaterThanOrEqual(100);
    expect(samplesOf(e, 'aex_money_held_cents')[0]!.value).toBeGreaterThanOrEqual(0);
  });

  it('answers only the bearer of METRICS_TOKEN when one is set, on the gateway and on a service\'s health port', async () => {
    const token = 'metrics-token-0123456789';
    const ex = await startTestExchange({ METRICS_TOKEN: token });
    try {
      const refused = await scrape(ex.url);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.text)).toMatchObject({ errors: [{ code: 'UNAUTHENTICATED' }] });
      expect((await scrape(ex.url, { authorization: 'Bearer not-the-token-at-all' })).status).toBe(401);
      const ok = await scrape(ex.url, { authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      expect(parseExposition(ok.text).types.get('aex_http_requests_total')).toBe('counter');
    } finally {
      await ex.stop();
    }
    const health = await serveHealth({ host: '127.0.0.1', port: 0, checks: async () => [], logger: createLogger('test', 'silent'), metricsToken: token });
    try {
      expect((await scrape(health.url)).status).toBe(401);
      const ok = await scrape(health.url, { authorization: `Bearer ${token}` });
      expect([ok.status, ok.type]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8']);
      expect(parseExposition(ok.text).types.size).toBeGreaterThan(0);
    } finally {
      health.close();
    }
  });
});
