import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The README is the front door: the two commands, a first purchase, then one short section per
// capability pointing to its page in docs/. It stays small as capabilities arrive, and every page it
// (or a docs page) points to exists.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = join(ROOT, 'README.md');

/** The relative links of a Markdown file: `[text](path)` and `![alt](path)`, anchors dropped. */
function relativeLinks(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:|^#/.test(l)).map((l) => l.split('#')[0]!);
}

describe('the README', () => {
  it('stays a front door of at most 25 KB', () => {
    expect(statSync(README).size).toBeLessThanOrEqual(25 * 1024);
  });

  it('starts with the two commands, then a first purchase', () => {
    const headings = readFileSync(README, 'utf8').split('\n').filter((l) => l.startsWith('## '));
    expect(headings.slice(0, 2)).toEqual(['## Run it, test it', '## Your first purchase']);
  });

  it('points only to files that exist, as do the docs pages it points to', () => {
    const docs = relativeLinks(README).filter((l) => l.startsWith('docs/') && l.endsWith('.md'));
    const missing = [README, ...docs.map((d) => join(ROOT, d))].flatMap((file) =>
      relativeLinks(file).filter((l) => !existsSync(join(dirname(file), l))).map((l) => `${file.slice(ROOT.length)} → ${l}`));
    expect(missing).toEqual([]);
  });
});
