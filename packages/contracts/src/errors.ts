// D1.4: every error code of the exchange, with its HTTP status. The only place codes are defined.
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  SCHEMA_VALIDATION_FAILED: 400,
  OUTPUT_VALIDATION_FAILED: 400,
  INVALID_SCHEMA: 400,
  NEGOTIATION_OUT_OF_TURN: 400,
  INVALID_NEGOTIATION_MESSAGE: 400,
  UNAUTHENTICATED: 401,
  SIGNATURE_REQUIRED: 401,
  SIGNATURE_INVALID: 401,
  SIGNATURE_EXPIRED: 401,
  INSUFFICIENT_FUNDS: 402,
  FORBIDDEN: 403,
  AGENT_INACTIVE: 403,
  DELEGATION_EXCEEDED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  INVALID_STATE: 409,
  LIMIT_REACHED: 409,
  SERVICE_NOT_ACTIVE: 409,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_IN_USE: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  PAYMENTS_NOT_CONFIGURED: 501,
  RATE_LIMITER_UNAVAILABLE: 503,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** D1.3 error entry. */
export interface ErrorEntry {
  code: ErrorCode;
  message: string;
  field?: string;
  details?: Record<string, unknown>;
}

/**
 * The one error family of the exchange, its codes exactly D1.4's. Expected failures are returned as values
 * (see `Result`); an AppError is what a boundary turns into the envelope.
 */
export class AppError extends Error {
  readonly status: number;
  readonly entries: ErrorEntry[];

  constructor(code: ErrorCode, message: string, extra: { field?: string; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
    this.entries = [{ code, message, ...extra }];
  }

  /** Several entries of one status (a schema failure yields one entry per violation, D1.3). */
  static many(entries: ErrorEntry[]): AppError {
    const first = entries[0];
    if (!first) throw new Error('AppError.many needs at least one entry');
    const err = new AppError(first.code, first.message, first);
    (err as { entries: ErrorEntry[] }).entries = entries.slice(0, 20);
    return err;
  }

  get code(): ErrorCode {
    return this.entries[0]!.code;
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

export type Result<T, E = AppError> = { ok: true; value: T } | { ok: false; error: E };
export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const fail = <E>(error: E): Result<never, E> => ({ ok: false, error });
