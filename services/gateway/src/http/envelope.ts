import { AppError, isAppError, type Envelope, type ErrorEntry, type PaginationInfo } from '@aex/contracts';
import type { Logger } from '@aex/platform';

/** D1.1 `meta`; a stored answer (D5.3) brings its own, so replays are the first answer's bytes. */
export interface Meta {
  requestId: string;
  timestamp: string;
}

const metaOf = (requestId: string | Meta): Meta => (typeof requestId === 'string' ? { requestId, timestamp: new Date().toISOString() } : requestId);

/** D1.1 success envelope. */
export function successBody(data: unknown, requestId: string | Meta, pagination?: PaginationInfo): string {
  const env: Envelope = { data, meta: metaOf(requestId), ...(pagination ? { pagination } : {}), errors: null };
  return JSON.stringify(env);
}

/** The same envelope around `data` already serialized (a cached answer): the same bytes `successBody` gives. */
export function successBodyOfJson(dataJson: string, requestId: string): string {
  return `{"data":${dataJson},"meta":{"requestId":${JSON.stringify(requestId)},"timestamp":"${new Date().toISOString()}"},"errors":null}`;
}

export interface ErrorResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** D1.1 / D1.3 error envelope; Retry-After where D1.4 asks for it. */
export function errorResponse(status: number, errors: ErrorEntry[], requestId: string | Meta): ErrorResponse {
  const env: Envelope = { data: null, meta: metaOf(requestId), errors };
  const headers: Record<string, string> = {};
  const retry = errors.find((e) => typeof e.details?.retryAfterSeconds === 'number')?.details?.retryAfterSeconds as number | undefined;
  if (retry !== undefined) headers['retry-after'] = String(retry);
  else if (errors.some((e) => e.code === 'RATE_LIMITER_UNAVAILABLE' || e.code === 'IDEMPOTENCY_KEY_IN_USE')) headers['retry-after'] = '1';
  return { status, body: JSON.stringify(env), headers };
}

interface FastifyishError {
  code?: string;
  statusCode?: number;
  message?: string;
}

/** Any thrown value → AppError; framework errors get their D1.4 codes, the rest a masked 500. */
export function toAppError(err: unknown, logger: Logger): AppError {
  if (isAppError(err)) return err;
  const e = (err ?? {}) as FastifyishError;
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than the limit.');
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e.statusCode === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json.');
  if (e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || e.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return new AppError('INVALID_JSON', 'The request body is not valid JSON.');
  if (e.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' || (e.statusCode === 400 && e.code?.startsWith('FST_'))) {
    return new AppError('VALIDATION_ERROR', 'The request is malformed.');
  }
  logger.error({ err }, 'unhandled error');
  return new AppError('INTERNAL_ERROR', 'The exchange failed to handle the request.');
}
