import { describe, expect, it } from 'vitest';
import { MetricsRegistry, metricsAuthorized } from '../src/metrics.js';
import { parseExposition, samplesOf } from '../../../test/prometheus-text.js';

describe('the Prometheus registry', () => {
  it('writes counters, gauges and histograms in the text format, label values escaped', async () => {
    const r = new MetricsRegistry();
    const c = r.counter('t_requests_total', 'Requests\nby route', ['route']);
    c.inc({ route: '/a' });
    c.inc({ route: '/a' }, 2);
    c.inc({ route: 'say "hi"\\' });
    r.gauge('t_pending', 'Pending').set({}, 7);
    const h = r.histogram('t_seconds', 'Time', ['op'], [0.1, 1]);
    for (const v of [0.05, 0.5, 5]) h.observe({ op: 'x' }, v);
    const text = await r.render();
    const e = parseExposition(text);
    expect(samplesOf(e, 't_requests_total', { route: '/a' })[0]!.value).toBe(3);
    expect(samplesOf(e, 't_requests_total', { route: 'say "hi"\\' })[0]!.value).toBe(1);
    expect(samplesOf(e, 't_pending')[0]!.value).toBe(7);
    expect(samplesOf(e, 't_seconds_bucket').map((s) => [s.labels.le, s.value])).toEqual([['0.1', 1], ['1', 2], ['+Inf', 3]]);
    expect(samplesOf(e, 't_seconds_sum')[0]!.value).toBeCloseTo(5.55);
    expect(text).toContain('# HELP t_requests_total Requests\\nby route\n# TYPE t_requests_total counter\n');
  });

  it('shares one metric per name, and refuses the same name as another type, a missing label or a counter going down', () => {
    const r = new MetricsRegistry();
    expect(r.counter('t_x_total', 'x')).toBe(r.counter('t_x_total', 'x'));
    expect(() => r.gauge('t_x_total', 'x')).toThrow(/already a counter/);
    expect(() => r.counter('t_y_total', 'y', ['route']).inc({})).toThrow(/label route missing/);
    expect(() => r.counter('t_z_total', 'z').inc({}, -1)).toThrow(/cannot go down/);
    expect(() => r.counter('bad name', 'b')).toThrow(/invalid metric name/);
  });

  it('runs collectors at each scrape, leaves out one that stalls, and stops running a removed one', async () => {
    const r = new MetricsRegistry();
    const g = r.gauge('t_due', 'Due');
    let n = 0;
    const remove = r.collect(async () => g.set({}, ++n));
    r.collect(() => new Promise(() => undefined));
    r.collect(async () => {
      throw new Error('database down');
    });
    expect(samplesOf(parseExposition(await r.render()), 't_due')[0]!.value).toBe(1);
    remove();
    expect(samplesOf(parseExposition(await r.render()), 't_due')[0]!.value).toBe(1);
  });

  it('lets a scrape in without a token configured, else only with its bearer', () => {
    expect(metricsAuthorized(undefined, undefined)).toBe(true);
    const token = 'metrics-token-0123456789';
    expect(metricsAuthorized(token, `Bearer ${token}`)).toBe(true);
    for (const h of [undefined, '', `Bearer ${token}x`, `Basic ${token}`, token]) expect(metricsAuthorized(token, h)).toBe(false);
  });
});
