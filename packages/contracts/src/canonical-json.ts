// RFC 8785 (JCS), shared by whatever signs or digests JSON that another party must read alike: the
// receipts' digests (D18.2), the agent cards' signatures (D21.1) and the x402 payment's signed text
// (D19.2, inlined into @agent-exchange/x402). No imports.

/**
 * RFC 8785 (JCS) for JSON values as parsed: object keys sorted by their UTF-16 code units, no
 * whitespace, strings and numbers as ECMAScript serializes them (which is what JCS specifies).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('JSON has no infinite or NaN numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
