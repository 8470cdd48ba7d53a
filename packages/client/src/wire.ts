import type { Envelope } from '@aex/contracts';
import type { RequestOptions } from './client.js';

/** Whether an answer is in the D1 envelope. */
export function isEnvelope(v: unknown): v is Envelope {
  return typeof v === 'object' && v !== null && 'data' in v && 'errors' in v && typeof (v as { meta?: { requestId?: unknown } }).meta?.requestId === 'string';
}

/** A request's query as the part of its address after `?` (the values left undefined are left out). */
export function queryString(query: RequestOptions['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.append(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}
