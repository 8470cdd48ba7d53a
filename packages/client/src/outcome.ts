import type { ErrorCode, ErrorEntry, PaginationInfo } from '@aex/contracts';

/** A failed call, as a value: the HTTP status and every D1.3 error entry of the envelope. */
export class ExchangeError extends Error {
  readonly status: number;
  readonly code: ErrorCode | 'NETWORK_ERROR' | 'INVALID_RESPONSE';
  readonly errors: ErrorEntry[];
  readonly requestId: string | null;

  constructor(status: number, errors: ErrorEntry[], requestId: string | null, fallback?: { code: 'NETWORK_ERROR' | 'INVALID_RESPONSE'; message: string }) {
    super(fallback?.message ?? errors[0]?.message ?? `HTTP ${status}`);
    this.name = 'ExchangeError';
    this.status = status;
    this.code = fallback?.code ?? errors[0]?.code ?? 'INVALID_RESPONSE';
    this.errors = errors;
    this.requestId = requestId;
  }

  /** The first entry with this code, if any (a 400 lists one entry per violated field). */
  entry(code: ErrorCode): ErrorEntry | undefined {
    return this.errors.find((e) => e.code === code);
  }
}

export interface Success<T> {
  ok: true;
  status: number;
  data: T;
  pagination?: PaginationInfo;
  requestId: string;
  headers: Headers;
}

export interface Failure {
  ok: false;
  status: number;
  error: ExchangeError;
  headers: Headers | null;
}

/** Every call resolves to one of these; nothing the server answers is thrown. */
export type Outcome<T> = Success<T> | Failure;

/** The data of a successful outcome, or the error thrown: for scripts that want exceptions. */
export function unwrap<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw outcome.error;
  return outcome.data;
}
