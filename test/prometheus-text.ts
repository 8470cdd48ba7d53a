/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for the tests: every line is a
 * HELP, a TYPE or a sample of a declared metric; label values are escaped; a histogram's buckets are
 * cumulative and end with `+Inf` equal to its `_count`. Throws naming the first line that is not.
 */
export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Exposition { types: Map<string, string>; samples: Sample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\["\\n])*)"(,|$)/y;

export function parseExposition(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.slice(0, -1).split('\n');
  lines.forEach((line, i) => {
    const at = `line ${i + 1} (${line.slice(0, 80)})`;
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3]!)) throw new Error(`${at}: unknown type`);
        if (types.has(meta[2]!)) throw new Error(`${at}: TYPE given twice`);
        types.set(meta[2]!, meta[3]!);
      }
      return;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`${at}: not a sample`);
    const [, name, labelText, raw] = m as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    if (labelText) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < labelText.length) {
        const l = LABEL.exec(labelText);
        if (!l) throw new Error(`${at}: bad labels`);
        labels[l[1]!] = l[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (raw !== 'NaN' && Number.isNaN(value)) throw new Error(`${at}: bad value`);
    const base = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!types.has(base)) throw new Error(`${at}: sample of an undeclared metric`);
    if (base !== name && types.get(base) !== 'histogram' && types.get(base) !== 'summary') throw new Error(`${at}: suffix on a ${types.get(base)}`);
    samples.push({ name, labels, value });
  });
  // Histograms: cumulative buckets, +Inf equal to _count, per series.
  for (const [name, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${name}_bucket`)) {
      const { le: _le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      for (let i = 1; i < buckets.length; i++) if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${name}${key}: buckets not cumulative`);
      const inf = buckets.find((b) => b.labels.le === '+Inf');
      const count = samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === key);
      if (!inf || !count || inf.value !== count.value) throw new Error(`${name}${key}: +Inf bucket and _count differ`);
    }
  }
  return { types, samples };
}

/** The samples of `name` whose labels include `labels`. */
export const samplesOf = (e: Exposition, name: string, labels: Record<string, string> = {}) =>
  e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
