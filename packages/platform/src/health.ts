import { createServer, type Server } from 'node:http';
import { sql, type Kysely } from 'kysely';
import type { Bus } from './bus/types.js';
import type { Logger } from './logger.js';
import { metrics, METRICS_CONTENT_TYPE, metricsAuthorized } from './metrics.js';

/** One part of a process's readiness: ok, or why not (`detail`). */
export interface HealthCheck {
  name: string;
  ok: boolean;
  detail?: string;
}

/** A check answers within this time or counts as failed: a probe must not hang on a stalled dependency. */
const HEALTH_CHECK_MS = 800;

/** Runs one check with the time bound; a check that throws or stalls is a failed check, with its reason. */
async function bounded(name: string, run: () => Promise<HealthCheck | boolean>): Promise<HealthCheck> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<HealthCheck>((resolve) => {
    timer = setTimeout(() => resolve({ name, ok: false, detail: `no answer within ${HEALTH_CHECK_MS} ms` }), HEALTH_CHECK_MS);
    timer.unref();
  });
  const answer = run().then(
    (r): HealthCheck => (typeof r === 'boolean' ? { name, ok: r } : r),
    (err: unknown): HealthCheck => ({ name, ok: false, detail: (err as Error).message }),
  );
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The checks of the services of one process, each named `<service>.<check>`. */
export function checksOf(services: Record<string, { checks?(): Promise<HealthCheck[]> } | null>): () => Promise<HealthCheck[]> {
  return async () => {
    const named = await Promise.all(Object.entries(services).map(async ([service, s]) => ((await s?.checks?.()) ?? []).map((c) => ({ ...c, name: `${service}.${c.name}` }))));
    return named.flat();
  };
}

/** The service's database answers. */
export const databaseCheck = <DB>(db: Kysely<DB>) => bounded('database', async () => {
  await sql`select 1`.execute(db);
  return true;
});

/** The message bus answers. */
export const busCheck = (bus: Bus) => bounded('bus', () => bus.healthy());

/**
 * `/healthz` (the process answers), `/readyz` (every check passes: 200, else 503 naming the failing
 * ones) and `/metrics` (Prometheus text; with `metricsToken`, only for its bearer) for a service run
 * on its own, on `HEALTH_PORT` — what Kubernetes probes and Prometheus call.
 */
export async function serveHealth(opts: { host: string; port: number; checks: () => Promise<HealthCheck[]>; logger: Logger; metricsToken?: string | undefined }): Promise<Server & { url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(405, { status: 'method not allowed' });
    if (path === '/healthz') return answer(200, { status: 'ok' });
    if (path === '/metrics') {
      if (!metricsAuthorized(opts.metricsToken, req.headers.authorization)) return answer(401, { status: 'unauthorized' });
      metrics.render().then((text) => {
        res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' });
        res.end(text);
      }, (err: unknown) => answer(500, { status: (err as Error).message }));
      return;
    }
    if (path !== '/readyz') return answer(404, { status: 'not found' });
    opts.checks().then(
      (checks) => answer(checks.every((c) => c.ok) ? 200 : 503, { status: checks.every((c) => c.ok) ? 'ready' : 'not ready', checks }),
      (err: unknown) => answer(503, { status: 'not ready', checks: [{ name: 'readiness', ok: false, detail: (err as Error).message }] }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as { port: number };
  const url = `http://${opts.host}:${port}`;
  opts.logger.info({ url }, 'health endpoints listening');
  return Object.assign(server, { url });
}
