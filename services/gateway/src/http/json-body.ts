import type { FastifyInstance, FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { AppError } from '@aex/contracts';
import { jsonProblem } from './input-hygiene.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes as received: what D3.1 signatures and D5 fingerprints are computed over. */
    rawBody?: Buffer;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON only (D1.4 415 for anything else, `application/*+json` accepted). The raw bytes are kept;
 * the text must be UTF-8 and parse; `__proto__` and `constructor.prototype` keys are dropped while
 * parsing; then the edge's hygiene rules apply (input-hygiene.ts) with the offending field named.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (req: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void) => {
    req.rawBody = body;
    if (body.length === 0) return done(null, undefined);
    let text: string;
    let value: unknown;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new AppError('INVALID_JSON', 'The request body is not valid UTF-8.'), undefined);
    }
    try {
      value = sjson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' });
    } catch {
      return done(new AppError('INVALID_JSON', 'The request body is not valid JSON.'), undefined);
    }
    const problem = jsonProblem(text);
    if (problem) {
      const field = `/body${problem.pointer}`;
      return done(new AppError('VALIDATION_ERROR', `${problem.pointer ? `"${field}"` : 'The body'} ${problem.message}.`, { field }), undefined);
    }
    done(null, value);
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => parse(req, body as Buffer, done));
  app.addContentTypeParser(/^application\/[a-z0-9.+-]+\+json$/i, { parseAs: 'buffer' }, (req, body, done) => parse(req, body as Buffer, done));
}
