import type { FastifyInstance } from 'fastify';
import { AppError } from '@aex/contracts';
import { busCheck, type Bus, type HealthCheck } from '@aex/platform';
import { successBody } from './envelope.js';
import type { SendError } from './error-answers.js';
import { send } from './pipeline.js';

/**
 * `/healthz` (the process answers) and `/readyz` (the bus and, in the one-process stack, the
 * services' `checks` pass).
 */
export function serveHealth(app: FastifyInstance, bus: Bus, checks: (() => Promise<HealthCheck[]>) | undefined, sendError: SendError): void {
  app.get('/healthz', async (req, reply) => send(reply, 200, successBody({ status: 'ok' }, req.id)));
  // Every check is bounded (health.ts), so /readyz answers within a second whatever stalls.
  app.get('/readyz', async (req, reply) => {
    const [busReady, others] = await Promise.all([busCheck(bus), checks?.() ?? []]);
    const all = [busReady, ...others];
    const failing = all.filter((c) => !c.ok);
    if (failing.length === 0) return send(reply, 200, successBody({ status: 'ready', bus: bus.kind, checks: all }, req.id));
    const why = failing.map((c) => (c.name === 'bus' ? 'the message bus is not reachable' : `${c.name}: ${c.detail ?? 'failing'}`)).join('; ');
    return sendError(req, reply, new AppError('SERVICE_UNAVAILABLE', `Not ready: ${why}.`, { details: { checks: all } }));
  });
}
