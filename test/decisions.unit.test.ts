import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A comment, test name or doc that cites a decision (`// D9.7`, `(D10.3)`, "D5.5's …") sends its
// reader to docs/decisions.md. Every number cited anywhere in the repository must be defined there,
// once.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RECORD = 'docs/decisions.md';
/** What the repository itself wrote: its code, tests, examples, deployment and docs. */
const SCANNED_DIRS = ['services', 'packages', 'test', 'examples', 'deploy', 'docs'];
const SCANNED_FILES = ['README.md'];
/** Installed, built or run-time folders: nobody here wrote their contents. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.data', 'coverage']);
const BINARY = /\.(png|jpe?g|gif|ico|webp|woff2?|ttf|gz|tgz|zip|wasm)$/i;

/** `## D9. Transactions` (or `###` under "Decided, not built yet") defines section D9. */
const SECTION_HEADING = /^#{2,3} D(\d+)\.\s/;
/** `- **D9.7** …` defines point D9.7 of the section above it. */
const POINT_ITEM = /^- \*\*D(\d+)\.(\d+)\*\*\s/;

/**
 * A citation: an uppercase D and digits at a word boundary (not `ID1`, `uD800`, `0xD3`), optionally
 * a point (`D9.7`, not a version's `D1.2.3`), optionally the end of a range (`D9.1–D9.6`,
 * `D9.1-D9.6`, `D11.3–4`, `D17–D21`).
 */
const CITATION = /(?<![\w\\$@#])D(\d+)(?:\.(\d+))?(?!\w|\.\d)(?:(?:\s?[–—-]\s?D(\d+)(?:\.(\d+))?|[–—-](\d+))(?!\w|\.\d))?/g;
/** Where a "D12" is a path, a query or an anchor, not a citation. */
const ADDRESS = /\b(?:https?|wss?|nats|postgres(?:ql)?):\/\/[^\s"'`<>)\]]+/g;
/** Ids, hashes, keys and other encoded values: no citation lives inside one. */
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const ENCODED = /[A-Za-z0-9+/=]{20,}/g;

interface DecisionRecord {
  /** Each defined number (`D9`, `D9.7`) with how many times it is defined. */
  defined: Map<string, number>;
  /** Points defined under another section's heading (`D9.7 under D10`). */
  misplaced: string[];
}

function readRecord(text: string): DecisionRecord {
  const defined = new Map<string, number>();
  const misplaced: string[] = [];
  let section: string | null = null;
  const define = (id: string) => defined.set(id, (defined.get(id) ?? 0) + 1);
  for (const line of text.split('\n')) {
    const heading = SECTION_HEADING.exec(line);
    if (heading) {
      section = heading[1]!;
      define(`D${section}`);
      continue;
    }
    const point = POINT_ITEM.exec(line);
    if (!point) continue;
    define(`D${point[1]}.${point[2]}`);
    if (point[1] !== section) misplaced.push(`D${point[1]}.${point[2]} under D${section ?? '-'}`);
  }
  return { defined, misplaced };
}

/** The decision numbers a text cites, each range spelled out (`D9.1–D9.3` → D9.1, D9.2, D9.3). */
function citedIn(text: string): Set<string> {
  const cited = new Set<string>();
  const plain = text.replace(ADDRESS, ' ').replace(UUID, ' ').replace(ENCODED, (run) => (/\d/.test(run) ? ' ' : run));
  for (const m of plain.matchAll(CITATION)) {
    const [, section, point, endSection, endPoint, shortEnd] = m;
    const start = point === undefined ? `D${section}` : `D${section}.${point}`;
    cited.add(start);
    const end = rangeEnd(section!, point, endSection, endPoint, shortEnd);
    if (end === null) continue;
    const ofSections = point === undefined && end.point === undefined;
    if (!ofSections && (point === undefined || end.point === undefined || end.section !== section)) {
      // A range across sections (D9.14–D10.2) cites its two ends; what lies between is not listed.
      cited.add(end.point === undefined ? `D${end.section}` : `D${end.section}.${end.point}`);
      continue;
    }
    const from = Number(ofSections ? section : point);
    const to = Number(ofSections ? end.section : end.point);
    if (to <= from) continue; // "D9.7–3 attempts" is no range
    for (let n = from + 1; n <= to; n++) cited.add(ofSections ? `D${n}` : `D${section}.${n}`);
  }
  return cited;
}

function rangeEnd(section: string, point: string | undefined, endSection?: string, endPoint?: string, shortEnd?: string) {
  if (endSection !== undefined) return { section: endSection, point: endPoint };
  if (shortEnd === undefined) return null;
  // D11.3–4 ends at D11.4; D17–21 at D21.
  return point === undefined ? { section: shortEnd, point: undefined } : { section, point: shortEnd };
}

/** Every text file under the scanned paths, as paths relative to the repository's root. */
function scannedFiles(): string[] {
  const files = [...SCANNED_FILES];
  const walk = (dir: string) => {
    for (const entry of readdirSync(ROOT + dir, { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(path);
      } else if (entry.isFile() && !BINARY.test(entry.name)) files.push(path);
    }
  };
  for (const dir of SCANNED_DIRS) walk(dir);
  return files;
}

describe('reading citations', () => {
  it('reads single numbers, sections, slashes, possessives and ranges of every spelling', () => {
    const text = [
      '// D9.7: the state machine; (D12) disputes; D13.2/D13.3 the ledger',
      "it('keeps D5.5's promise', …); D9.1–D9.3 and D6.1-D6.2; D11.3–4; D17–D19; D9.14–D10.1.",
    ].join('\n');
    expect([...citedIn(text)].sort()).toEqual([
      'D10.1', 'D11.3', 'D11.4', 'D12', 'D13.2', 'D13.3', 'D17', 'D18', 'D19', 'D5.5',
      'D6.1', 'D6.2', 'D9.1', 'D9.14', 'D9.2', 'D9.3', 'D9.7',
    ]);
  });

  it('ignores what only looks like a citation: identifiers, hex, encoded values, URLs, versions', () => {
    const text = [
      'const ID1 = "\\uD800"; 0xD3; sha 9f8e7D6c5b4a39281D706f5e4d3c2b1a; key ae_live_Ab3D4x9Zq0_D1e2f3G4h',
      'see https://example.com/docs/D7.2 and postgres://host/D12; version D1.2.3; aD3 D3x _D4',
    ].join('\n');
    expect([...citedIn(text)]).toEqual([]);
  });

  it('reads a section per heading and a point per bold item, and says which point sits in the wrong section', () => {
    const record = readRecord(['## D1. Envelope', '- **D1.1** one', '- **D1.2** two', '', '### D2. Keys', '- **D1.3** astray'].join('\n'));
    expect([...record.defined.keys()]).toEqual(['D1', 'D1.1', 'D1.2', 'D2', 'D1.3']);
    expect(record.misplaced).toEqual(['D1.3 under D2']);
  });
});

describe('the decision record', () => {
  const record = readRecord(readFileSync(ROOT + RECORD, 'utf8'));

  it('defines every decision number once, each point under its own section', () => {
    expect([...record.defined].filter(([, times]) => times > 1).map(([id, times]) => `${id} (${times} times)`)).toEqual([]);
    expect(record.misplaced).toEqual([]);
  });

  it('defines every decision number the repository cites', () => {
    const firstCitedIn = new Map<string, string>();
    for (const file of scannedFiles()) {
      const text = readFileSync(ROOT + file, 'utf8');
      if (text.includes('\0')) continue;
      for (const id of citedIn(text)) if (!firstCitedIn.has(id)) firstCitedIn.set(id, file);
    }
    const undefinedCitations = [...firstCitedIn].filter(([id]) => !record.defined.has(id)).map(([id, file]) => `${id} (cited in ${file})`);
    expect(undefinedCitations).toEqual([]);
    expect(firstCitedIn.size).toBeGreaterThan(100);
  });
});
