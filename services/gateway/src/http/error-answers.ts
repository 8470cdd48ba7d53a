import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '@aex/platform';
import { RateLimitedError } from '../guards/rate-limit.js';
import { errorResponse, toAppError } from './envelope.js';
import { send } from './pipeline.js';

/** Answers a request with an error in the envelope (D1): what was thrown, or a refusal made. */
export type SendError = (req: FastifyRequest, reply: FastifyReply, err: unknown) => Promise<FastifyReply>;

/** The gateway's error answer, for bodies of at most `bodyLimitBytes`. */
export function errorSender(bodyLimitBytes: number): SendError {
  return async (req, reply, err) => {
    const appErr = toAppError(err, req.log as unknown as Logger);
    // A body refused before it was read (413) is read to its end and dropped first, within bounds:
    // a socket closed with unread data is reset, and the client would lose the answer mid-upload.
    if (appErr.status === 413 && !req.raw.complete) await discardBody(req.raw, Math.max(DISCARD_MIN_BYTES, 8 * bodyLimitBytes), DISCARD_MS);
    const res = errorResponse(appErr.status, appErr.entries, req.id);
    if (err instanceof RateLimitedError) reply.headers(err.decision.headers);
    reply.headers(res.headers);
    return send(reply, res.status, res.body);
  };
}

/**
 * HTTP that Node's parser refuses before fastify sees a request (bad Content-Length, control
 * characters in headers, a request line or headers over the size limit, a client too slow to send
 * its request): answered 400 in the envelope, then the connection closed.
 */
export function answerMalformedHttp(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const message =
    err.code === 'HPE_HEADER_OVERFLOW' ? 'The request line or headers are larger than the exchange accepts.'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'The request was not received in time.'
        : 'The request is not valid HTTP/1.1.';
  const requestId = randomUUID();
  const body = errorResponse(400, [{ code: 'VALIDATION_ERROR', message }], requestId).body;
  socket.end(
    `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** At least this much of a refused body is read and dropped before the 413 (and for at most `DISCARD_MS`). */
const DISCARD_MIN_BYTES = 16 * 1024 * 1024;
const DISCARD_MS = 5000;

/** Reads the rest of a request body and drops it, stopping after `maxBytes` or `maxMs`. */
function discardBody(req: IncomingMessage, maxBytes: number, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData).off('end', done).off('error', done).off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) done();
    };
    const timer = setTimeout(done, maxMs);
    req.on('data', onData).once('end', done).once('error', done).once('close', done);
    req.resume();
  });
}
