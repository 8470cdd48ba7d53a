import type { ErrorEntry } from './errors.js';

/** D1.1 response envelope. */
export interface Envelope<T = unknown> {
  data: T | null;
  meta: { requestId: string; timestamp: string };
  pagination?: PaginationInfo;
  errors: ErrorEntry[] | null;
}

export interface PaginationInfo {
  total: number;
  limit: number;
  offset: number;
  hasMore: boolean;
}

export function pagination(total: number, limit: number, offset: number): PaginationInfo {
  return { total, limit, offset, hasMore: offset + limit < total };
}
