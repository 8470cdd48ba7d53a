import type { FastifyInstance } from 'fastify';

/** Listens with sane timeouts; `close()` drains in-flight requests (fastify/demo's server.ts shape). */
export async function listen(app: FastifyInstance, host: string, port: number): Promise<string> {
  app.server.keepAliveTimeout = 65_000;
  app.server.requestTimeout = 60_000;
  return app.listen({ host, port });
}
