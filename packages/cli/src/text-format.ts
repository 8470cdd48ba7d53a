export type Column<T> = [header: string, value: (row: T) => unknown];

/** A plain text table: a header, then one line per row, columns padded to their widest cell. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = [columns.map(([h]) => h), ...rows.map((r) => columns.map(([, v]) => cell(v(r))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

/** Key/value lines for one record. */
export function record(pairs: Array<[string, unknown]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join('\n') + '\n';
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Cents as dollars for people: 1234 → "$12.34". */
export const usd = (cents: number | null | undefined) => (cents === null || cents === undefined ? '-' : `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`);
