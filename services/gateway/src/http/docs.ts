import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { AppError } from '@aex/contracts';
import { takePublic, type RateLimiter } from '../guards/rate-limit.js';

/** The repository's `docs/` beside the services (in a clone and in the image alike). */
const DOCS_DIR = fileURLToPath(new URL('../../../../docs/', import.meta.url));

/**
 * Serves the project's own documentation at `/docs/{name}.md` (and the OpenAPI document's copy,
 * `/docs/openapi.json`), so that an error can link the section that explains it (a refused signature
 * links `/docs/signing.md`) on the exchange that answered. Only the files found at start are served,
 * read once: no path from a request ever reaches the file system. Limited per client IP like every
 * public route (D4.2); refusals go through the app's error handler, in the envelope.
 */
export function serveDocs(app: FastifyInstance, limiter: RateLimiter): void {
  const pages = new Map<string, string>();
  let names: string[] = [];
  try {
    names = readdirSync(DOCS_DIR).filter((n) => /^[a-z0-9-]+\.(md|json)$/.test(n)).sort();
  } catch {
    // An installation without the docs folder serves none: every /docs/ path answers 404.
  }
  for (const name of names) pages.set(name, readFileSync(DOCS_DIR + name, 'utf8'));
  const index = ['# Agent Exchange documentation', '', ...names.map((n) => `- [${n}](/docs/${n})`), ''].join('\n');

  app.get('/docs/*', async (req, reply) => {
    reply.headers(await takePublic(limiter, req.ip));
    const name = (req.params as { '*': string })['*'];
    const page = name === '' ? index : pages.get(name);
    if (page === undefined) throw new AppError('NOT_FOUND', 'No such documentation page; /docs/ lists them.');
    return reply.code(200).type(name.endsWith('.json') ? 'application/json; charset=utf-8' : 'text/markdown; charset=utf-8').send(page);
  });
}
