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
    } catch (err) {
      return done(invalidJson(text, err), undefined);
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

/**
 * INVALID_JSON that says where: the parser's reason and the position it stopped at, as a character
 * offset and as line and column (both from 1), so the sender can find the mistake in what it sent.
 */
export function invalidJson(text: string, err: unknown): AppError {
  const reason = err instanceof SyntaxError ? err.message.replace(/ in JSON at position \d+.*$/s, '').replace(/^JSON\.parse: /, '') : 'unreadable';
  const found = err instanceof SyntaxError ? /at position (\d+)/.exec(err.message) : null;
  // V8 names no position at the end of the input ("Unexpected end of JSON input").
  const position = found ? Number(found[1]) : text.length;
  const before = text.slice(0, position).split('\n');
  const line = before.length;
  const column = before[before.length - 1]!.length + 1;
  return new AppError('INVALID_JSON', `The request body is not valid JSON: ${reason} at line ${line}, column ${column} (character ${position}).`, {
    field: '/body',
    details: { position, line, column, reason },
  });
}
