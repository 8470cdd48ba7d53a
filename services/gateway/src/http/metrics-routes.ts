import type { FastifyInstance } from 'fastify';
import { AppError } from '@aex/contracts';
import { exchangeMetrics, metrics, METRICS_CONTENT_TYPE, metricsAuthorized, type ExchangeConfig } from '@aex/platform';
import type { AuthFailures } from '../guards/auth-failures.js';
import type { SendError } from './error-answers.js';

/** Every answer counted and timed by its route's template (a bounded set of labels; no route: `unmatched`). */
export function countAnswers(app: FastifyInstance): void {
  const [requests, durations] = [exchangeMetrics.httpRequests(), exchangeMetrics.httpDuration()];
  const counted = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const key = `${req.method} ${route} ${reply.statusCode}`;
    let series = counted.get(key);
    if (!series) {
      series = { count: requests.bind({ route, method: req.method, status: String(reply.statusCode) }), time: durations.bind({ route, method: req.method }) };
      counted.set(key, series);
    }
    series.count.inc();
    series.time.observe(reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Prometheus text (docs/metrics.md): this process's metrics; with METRICS_TOKEN set, for its bearer
 * only, a wrong token taking from the address's failed-authentication limit (D24.1).
 */
export function serveMetrics(app: FastifyInstance, config: ExchangeConfig, failures: AuthFailures, sendError: SendError): void {
  app.get('/metrics', async (req, reply) => {
    if (config.METRICS_TOKEN) failures.check(req.ip);
    if (!metricsAuthorized(config.METRICS_TOKEN, req.headers.authorization)) {
      reply.header('www-authenticate', 'Bearer');
      const refused = new AppError('UNAUTHENTICATED', 'The metrics token is missing or wrong (METRICS_TOKEN).');
      if (req.headers.authorization !== undefined) await failures.failed(req.ip, refused);
      return sendError(req, reply, refused);
    }
    return reply.header('content-type', METRICS_CONTENT_TYPE).header('cache-control', 'no-store').send(await metrics.render());
  });
}
