import { ERROR_CODES, ERROR_STATUS, type ErrorCode, type TSchema } from '@aex/contracts';
import type { RouteSpec } from './routes.js';

// The OpenAPI document's shared parts (openapi.ts): the headers a request may carry, the headers of
// the answers, one error response per status, and which of them each route refers to.

/** The methods that change something: a route of one with an operation takes an Idempotency-Key. */
export const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

const SIGNATURE_TEXT = 'Base64 Ed25519 signature, by the agent\'s registered signing key, of "{timestamp}:{METHOD}:{path}:{bodyHash}" (docs/signing.md).';
const TIMESTAMP_TEXT = 'The ISO 8601 time with a zone that was signed; within 300 s of the server clock.';
const header = (name: string, description: string, schema: object, required = false) => ({ name, in: 'header', required, description, schema });
export const PARAMETER_COMPONENTS = {
  RequestId: header('X-Request-Id', 'Your id for the request (a UUID); answered in meta.requestId and the X-Request-Id header. Another value is replaced by a new UUID.', { type: 'string', format: 'uuid' }),
  IdempotencyKey: header('Idempotency-Key', 'Makes the request safe to retry: the first answer is stored for 48 h and given again, byte for byte, to a repeat with the same method, path and body (docs/api.md, "Idempotency").', { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' }),
  Signature: header('X-AE-Signature', SIGNATURE_TEXT + ' Optional here; verified when present.', { type: 'string' }),
  SignatureRequired: header('X-AE-Signature', SIGNATURE_TEXT + ' Required on this route.', { type: 'string' }, true),
  SignatureTimestamp: header('X-AE-Signature-Timestamp', TIMESTAMP_TEXT, { type: 'string', format: 'date-time' }),
  SignatureTimestampRequired: header('X-AE-Signature-Timestamp', TIMESTAMP_TEXT, { type: 'string', format: 'date-time' }, true),
};

export const HEADER_COMPONENTS = {
  RequestId: { description: 'The request id, as in meta.requestId', schema: { type: 'string', format: 'uuid' } },
  RateLimitLimit: { description: 'Requests per minute of the route\'s group', schema: { type: 'integer' } },
  RateLimitRemaining: { description: 'Requests left now', schema: { type: 'integer' } },
  RateLimitReset: { description: 'Seconds until the bucket is full again', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before retrying (429, 503, 409 IDEMPOTENCY_KEY_IN_USE, and a 202 whose outcome is unknown)', schema: { type: 'integer', minimum: 1 } },
  IdempotencyKey: { description: 'The key to repeat the request with to learn its outcome: the client\'s own Idempotency-Key, or the one the gateway made for a request sent without one', schema: { type: 'string' } },
  Location: { description: 'The resource the request acts on, to read its current state (when the route acts on one)', schema: { type: 'string' } },
  IdempotentReplayed: { description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key', schema: { type: 'string', enum: ['true'] } },
};
const headerRef = (name: keyof typeof HEADER_COMPONENTS) => ({ $ref: `#/components/headers/${name}` });

/** The headers of a route's success (and 202) answer; the error answers' are `errorResponseComponents`'. */
export const successHeaders = (r: RouteSpec) => {
  const h: Record<string, unknown> = { 'X-Request-Id': headerRef('RequestId') };
  if (r.rateGroup) {
    h['RateLimit-Limit'] = headerRef('RateLimitLimit');
    h['RateLimit-Remaining'] = headerRef('RateLimitRemaining');
    h['RateLimit-Reset'] = headerRef('RateLimitReset');
  }
  if (MUTATING.has(r.method) && r.op) h['Idempotent-Replayed'] = headerRef('IdempotentReplayed');
  return h;
};

/** Every code a route can answer: its operation's own, then the edge's, by what the route takes. */
export function routeErrorCodes(r: RouteSpec): ErrorCode[] {
  const codes = new Set<ErrorCode>(r.errors ?? []);
  const input = r.op?.input.properties as Record<string, TSchema> | undefined;
  const takesParams = ['path', 'query'].some((p) => Object.keys((input?.[p] as { properties?: object } | undefined)?.properties ?? {}).length > 0);
  if (takesParams || r.body) codes.add('VALIDATION_ERROR');
  if (r.body) ['INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'].forEach((c) => codes.add(c as ErrorCode));
  if (r.auth === 'agent') {
    ['UNAUTHENTICATED', 'SIGNATURE_INVALID', 'SIGNATURE_EXPIRED'].forEach((c) => codes.add(c as ErrorCode));
    if (r.signature === 'required') codes.add('SIGNATURE_REQUIRED');
  }
  if (r.auth === 'admin') ['UNAUTHENTICATED', 'NOT_FOUND'].forEach((c) => codes.add(c as ErrorCode));
  if (MUTATING.has(r.method) && r.op) ['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'].forEach((c) => codes.add(c as ErrorCode));
  // A route that checks a secret is also limited by the address's failed authentications (D24.1).
  if (r.rateGroup || r.auth !== 'none') ['RATE_LIMITED', 'RATE_LIMITER_UNAVAILABLE'].forEach((c) => codes.add(c as ErrorCode));
  if (r.op) codes.add('SERVICE_UNAVAILABLE');
  codes.add('INTERNAL_ERROR');
  return [...codes];
}

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is invalid', 401: 'Not authenticated, or the signature is missing, invalid or expired', 402: 'Not enough available balance',
  403: 'Authenticated but not allowed', 404: 'No such resource, or one the caller may not see', 409: 'Conflicts with the resource\'s current state',
  405: 'The path does not take this method', 413: 'The body is larger than the limit', 415: 'The body is not application/json', 422: 'The Idempotency-Key was used for another request',
  429: 'Rate limited', 500: 'The exchange failed to handle the request', 501: 'Not configured on this exchange', 503: 'A part of the exchange is unavailable; retry',
};

/** The error answers of a route, by status: each refers to the status's shared response and names the route's codes. */
export function errorResponses(r: RouteSpec): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrorCodes(r)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  // A reference to the status's shared response, its description naming this route's codes (OpenAPI 3.1).
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) out[String(status)] = { $ref: `#/components/responses/Error${status}`, description: `${STATUS_TEXT[status] ?? 'Error'}: ${codes.join(', ')}` };
  return out;
}

/** One shared error response per status: the envelope, the headers it carries and an example. */
export function errorResponseComponents(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // 405 belongs to no operation: a path answers it for the methods it does not take.
  for (const status of [...new Set(Object.values(ERROR_STATUS))].filter((st) => st !== 405).sort((a, b) => a - b)) {
    const first = ERROR_CODES.find((c) => ERROR_STATUS[c] === status)!;
    const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('RequestId') };
    if (status === 429 || status === 503 || status === 409) headers['Retry-After'] = headerRef('RetryAfter');
    out[`Error${status}`] = {
      description: STATUS_TEXT[status] ?? 'Error',
      headers,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorEnvelope' },
          example: { data: null, meta: { requestId: '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a', timestamp: '2026-01-31T12:00:00.000Z' }, errors: [{ code: first, message: exampleMessage(first) }] },
        },
      },
    };
  }
  out.OutcomeUnknown = {
    description: 'Accepted, outcome unknown: the service took the request but did not answer in time, and it may have been applied. Repeat the request with the Idempotency-Key of this answer to learn its outcome (docs/api.md)',
    headers: { 'X-Request-Id': headerRef('RequestId'), 'Idempotency-Key': headerRef('IdempotencyKey'), 'Retry-After': headerRef('RetryAfter'), Location: headerRef('Location') },
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorEnvelope' },
        example: { data: null, meta: { requestId: '7d0c5a0e-8f0e-4a57-9d53-7f7f5c1e2b9a', timestamp: '2026-01-31T12:00:00.000Z' }, errors: [{ code: 'IDEMPOTENCY_KEY_IN_USE', message: 'The outcome is not known yet: the wallet service took the request but has not answered, and it may have been applied. Repeat the request with the same Idempotency-Key to learn its outcome.', details: { outcome: 'unknown', retryAfterSeconds: 1 } }] },
      },
    },
  };
  return out;
}

const exampleMessage = (code: ErrorCode) => code.charAt(0) + code.slice(1).toLowerCase().replace(/_/g, ' ') + '.';
