import { writeFileSync } from 'node:fs';

/**
 * One figure of a benchmark next to its baseline measured in the same run. `ratio` is
 * value ÷ baseline: for a rate, higher is better; for a latency (`lowerIsBetter`), lower is.
 */
export interface Row {
  case: string;
  value: number;
  unit: string;
  baseline: number;
  baselineName: string;
  ratio: number;
  lowerIsBetter?: boolean;
  /** The target, as text, and whether this run met it (null: no target for this figure). */
  target: string;
  met: boolean | null;
}

/** A baseline of 0 (a latency below the load tool's 1 ms resolution) has no ratio: NaN, shown as "—", null in JSON. */
export const row = (r: Omit<Row, 'ratio'>): Row => ({ ...r, ratio: r.baseline > 0 ? r.value / r.baseline : Number.NaN });

/** Writes a benchmark's rows (what `pnpm bench` tabulates) and its own details as JSON. */
export function writeReport(file: string | undefined, bench: string, rows: Row[], detail: unknown): void {
  if (!file) return;
  writeFileSync(file, JSON.stringify({ bench, at: new Date().toISOString(), rows, detail }, null, 2));
}

/** A figure as text; none (NaN, or null once read back from JSON) as "—". */
const num = (n: number | null) => (n === null || !Number.isFinite(n) ? '—' : n.toFixed(Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2));

/** The rows as an aligned text table. */
export function table(rows: (Row & { bench?: string })[]): string {
  const head = ['case', 'exchange', 'baseline', 'ratio', 'target', ''];
  const cells = rows.map((r) => [
    r.bench ? `${r.bench}: ${r.case}` : r.case,
    `${num(r.value)} ${r.unit}`,
    Number.isFinite(r.baseline) ? `${num(r.baseline)} ${r.unit} (${r.baselineName})` : '—',
    r.ratio !== null && Number.isFinite(r.ratio) ? `${r.ratio.toFixed(3)}${r.lowerIsBetter ? ' ↓' : ''}` : '—',
    r.target,
    r.met === null ? '' : r.met ? 'met' : 'MISSED',
  ]);
  const widths = head.map((_, c) => Math.max(...[head, ...cells].map((r) => r[c]!.length)));
  return [head, ...cells].map((r) => `  ${r.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd()).join('\n');
}
