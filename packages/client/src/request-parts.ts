import type { Envelope } from '@aex/contracts';
import type { RequestOptions } from './options.js';

/** A D1 envelope: `data`, `errors` and the request id in `meta`. */
export function isEnvelope(v: unknown): v is Envelope {
  return typeof v === 'object' && v !== null && 'data' in v && 'errors' in v && typeof (v as { meta?: { requestId?: unknown } }).meta?.requestId === 'string';
}

/** `?a=1&b=x` of the query's defined values ('' when none). */
export function queryString(query: RequestOptions['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.append(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}
