import type { TSchema } from '@aex/contracts';

/** Query objects whose text could not be decoded (bad %-encoding or invalid UTF-8). */
const malformed = new WeakSet<object>();

/**
 * The query string parser of the gateway: `+` is a space, %-sequences must decode to valid UTF-8
 * (else the query is marked malformed and answered 400, never guessed at), a repeated name gives an
 * array (which the contract then refuses), and the result has no prototype.
 */
export function parseQueryString(qs: string): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const part of qs.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' '));
      value = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      malformed.add(out);
      continue;
    }
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

export const isMalformedQuery = (query: object) => malformed.has(query);

const INTEGER = /^-?(0|[1-9]\d{0,15})$/;
const NUMBER = /^-?(0|[1-9]\d{0,15})(\.\d{1,16})?$/;

/**
 * Query values are text; a contract property typed integer, number or boolean takes only the plain
 * spelling of one (`12`, `-3`, `0.5`, `true`) — not `1e3`, `0x10`, ` 12`, `+5` or 17 digits — so no
 * number a service sees was guessed from a string. Anything else stays text for the validator to
 * refuse with the property named.
 */
export function coerceQuery(schema: TSchema, query: Record<string, unknown>): Record<string, unknown> {
  const props = ((schema as { properties?: Record<string, { type?: string }> }).properties ?? {});
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    const type = props[name]?.type;
    if (typeof value !== 'string') out[name] = value;
    else if (type === 'integer' && INTEGER.test(value)) out[name] = Number(value);
    else if (type === 'number' && NUMBER.test(value)) out[name] = Number(value);
    else if (type === 'boolean' && (value === 'true' || value === 'false')) out[name] = value === 'true';
    else out[name] = value;
  }
  return out;
}
