import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The client's README shows, in an example, every call the README's walkthrough makes through
// examples/consumer.mjs and examples/provider.mjs: a newcomer reading one finds the other.

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const codeOf = (markdown: string) => [...markdown.matchAll(/```(?:js|ts)\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n');

/** `me.fund(`, `exchange.createAccount(`: the client's methods an example calls, and the functions it imports. */
function callsOf(source: string): string[] {
  const methods = [...source.matchAll(/\b(?:me|exchange)\.(\w+)\(/g)].map((m) => m[1]!);
  const imported = [...source.matchAll(/import \{([^}]+)\} from '@agent-exchange\/client'/g)].flatMap((m) => m[1]!.split(',').map((s) => s.trim()));
  return [...new Set([...methods, ...imported])].sort();
}

describe("the client's README", () => {
  const examples = read('packages/client/README.md');
  const code = codeOf(examples);

  for (const file of ['examples/consumer.mjs', 'examples/provider.mjs']) {
    it(`shows every call of ${file} in an example`, () => {
      const calls = callsOf(read(file));
      expect(calls.length).toBeGreaterThan(5);
      expect(calls.filter((c) => !new RegExp(`\\b${c}\\b`).test(code))).toEqual([]);
    });
  }

  it('shows deliver with the API body, { output }', () => {
    expect(code).toMatch(/\.deliver\(\w+(\.id)?, \{ output/);
    expect(code).not.toMatch(/\.deliver\(\w+(\.id)?, output/);
  });
});
