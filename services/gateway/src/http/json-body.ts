import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { AppError } from '@aex/contracts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received: what D3.1 signatures and D5 fingerprints are computed over. */
    rawBody?: Buffer;
  }
}

/**
 * JSON only (D1.4 415 for anything else, `application/*+json` accepted). The raw bytes are kept;
 * `__proto__` and `constructor.prototype` keys are dropped while parsing.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (req: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, sjson.parse(body.toString('utf8'), undefined, { protoAction: 'remove', constructorAction: 'remove' }));
    } catch {
      done(new AppError('INVALID_JSON', 'The request body is not valid JSON.'), undefined);
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => parse(req, body as Buffer, done));
  app.addContentTypeParser(/^application\/[a-z0-9.+-]+\+json$/i, { parseAs: 'buffer' }, (req, body, done) => parse(req, body as Buffer, done));
}
