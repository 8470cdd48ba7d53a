import { describe, expect, it } from 'vitest';
import { AppError } from '@aex/contracts';
import { acceptSampleNeeds, checkSampleNeeds } from '../src/domain/sample-needs.js';
import { searchText } from '../src/domain/search-text.js';
import { embeddingText } from '../src/discovery/sentence-encoder.js';

describe('sample needs (D22.5)', () => {
  it('keeps good phrases, trimmed', () => {
    expect(checkSampleNeeds(['  is this a palindrome ', 'does this read the same backwards'])).toEqual({ value: ['is this a palindrome', 'does this read the same backwards'], errors: [] });
    expect(checkSampleNeeds([]).errors).toEqual([]);
  });
  it('bounds each phrase to 3–200 characters once trimmed, counting characters, not UTF-16 units', () => {
    const fields = (raw: string[]) => checkSampleNeeds(raw).errors.map((e) => e.field);
    expect(fields(['  ab  ', 'abc'])).toEqual(['/body/sampleNeeds/0']);
    expect(fields(['x'.repeat(200), 'x'.repeat(201)])).toEqual(['/body/sampleNeeds/1']);
    expect(fields(['😀'.repeat(200)])).toEqual([]);
    expect(checkSampleNeeds(['  ab  ']).errors[0]!.message).toBe('sampleNeeds/0 is 2 characters long once trimmed; each sample need has 3 to 200.');
  });
  it('refuses control, bidirectional, zero-width and other invisible characters, naming the code point', () => {
    for (const c of ['\u0007', '\n', '\u202E', '\u2066', '\u200B', '\u200D', '\uFEFF', '\u2028', '\uE000']) {
      const { errors } = checkSampleNeeds([`is this${c} a palindrome`]);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: 'VALIDATION_ERROR', field: '/body/sampleNeeds/0', message: expect.stringContaining(`U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`) });
    }
  });
  it('refuses repeats ignoring case and compatibility forms, pointing at the later one', () => {
    const { errors } = checkSampleNeeds(['Find a file', 'convert units', 'find a ﬁle', 'CONVERT UNITS ']);
    expect(errors.map((e) => [e.field, e.message])).toEqual([
      ['/body/sampleNeeds/2', 'sampleNeeds/2 repeats sampleNeeds/0 (case and compatibility forms, such as full-width letters, are ignored).'],
      ['/body/sampleNeeds/3', 'sampleNeeds/3 repeats sampleNeeds/1 (case and compatibility forms, such as full-width letters, are ignored).'],
    ]);
  });
  it('refuses more than ten', () => {
    expect(checkSampleNeeds(Array.from({ length: 11 }, (_, i) => `need number ${i}`)).errors.map((e) => e.field)).toEqual(['/body/sampleNeeds']);
  });
  it('throws one VALIDATION_ERROR listing every bad phrase, and leaves an absent field absent', () => {
    expect(acceptSampleNeeds(undefined)).toBeUndefined();
    expect(acceptSampleNeeds([' ok then '])).toEqual(['ok then']);
    let thrown: unknown;
    try {
      acceptSampleNeeds(['no', 'fine one', 'FINE ONE']);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).status).toBe(400);
    expect((thrown as AppError).entries.map((e) => [e.code, e.field])).toEqual([['VALIDATION_ERROR', '/body/sampleNeeds/0'], ['VALIDATION_ERROR', '/body/sampleNeeds/2']]);
  });
  it('are matched like the description (class C) and are part of the text embedded for meaning', () => {
    const s = { name: 'Palindrome Checker', description: 'Checks strings.', category: 'text', subcategory: null, tags: [], capabilities: [], inputSchema: {}, outputSchema: {}, examples: [] };
    expect(searchText({ ...s, sampleNeeds: ['does this read the same backwards'] }).c).toBe('Checks strings. . does this read the same backwards');
    expect(searchText(s).c).toBe('Checks strings.');
    expect(embeddingText({ ...s, sampleNeeds: ['is it the same reversed'] })).toBe('Palindrome Checker. text. is it the same reversed. Checks strings.');
    // Without sample needs the text is what it was, so stored embeddings stay current.
    expect(embeddingText(s)).toBe('Palindrome Checker. text. Checks strings.');
  });
});
