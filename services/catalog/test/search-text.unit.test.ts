import { describe, expect, it } from 'vitest';
import { schemaText, searchText, vocabularyOf, words } from '../src/domain/search-text.js';

describe('search text (D8.2)', () => {
  it('splits identifiers into words', () => {
    expect(words('sourceLanguage')).toBe('source Language');
    expect(words('source_language-code.v2')).toBe('source language code v2');
    expect(words('HTMLToPDF')).toBe('HTML To PDF');
  });
  it('puts name and tags in A, category and capabilities in B, description in C, schema words in D', () => {
    const t = searchText({
      name: 'Translator', description: 'Translates text.', category: 'language', subcategory: 'machine-translation', tags: ['i18n'],
      capabilities: [{ name: 'batchMode', formats: ['docx'] }],
      inputSchema: { type: 'object', properties: { targetLanguage: { type: 'string', description: 'BCP 47 code' } } },
      outputSchema: { title: 'Result', type: 'object', properties: { translated_text: { type: 'string' } } },
      examples: [{ description: 'German greeting' }],
    });
    expect(t.a).toBe('Translator . i18n');
    expect(t.b).toBe('language . machine translation . name batch Mode formats docx');
    expect(t.c).toBe('Translates text.');
    expect(t.d).toContain('target Language . BCP 47 code');
    expect(t.d).toContain('Result . translated text');
    expect(t.d).toContain('German greeting');
    expect(vocabularyOf(t)).toEqual(expect.arrayContaining(['translator', 'translates', 'docx', 'greeting']));
  });
  it('walks nested schemas, combinators and $defs but stays bounded', () => {
    const text = schemaText({ $defs: { addr: { properties: { postalCode: { description: 'ZIP' } } } }, anyOf: [{ properties: { city: {} } }], items: { properties: { street: {} } } });
    expect(text).toContain('postal Code');
    expect(text).toContain('ZIP');
    expect(text).toContain('city');
    expect(text).toContain('street');
  });
});
