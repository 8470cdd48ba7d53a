/**
 * The words a service is found by (D8.2), in four weight classes of its Postgres `tsvector`:
 *   A — name and tags;   B — category, subcategory and capability descriptors;
 *   C — description and sample needs (D22.5);     D — property names, titles and descriptions inside the schemas, example notes.
 * Identifiers are split into words (`sourceLanguage`, `source_language` → "source language") so that
 * schema vocabulary matches plain-language needs.
 */
export interface SearchText {
  a: string;
  b: string;
  c: string;
  d: string;
}

export interface SearchableService {
  name: string;
  description: string;
  category: string;
  subcategory: string | null;
  tags: string[];
  capabilities: Record<string, unknown>[];
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  examples: { description?: string }[];
  /** D22.5: phrases of needs the provider says the service answers, matched like the description. */
  sampleNeeds?: string[];
}

const MAX_D_CHARS = 20_000;

export function searchText(s: SearchableService): SearchText {
  return {
    a: [s.name, ...s.tags.map(words)].join(' . '),
    b: [words(s.category), s.subcategory ? words(s.subcategory) : '', ...s.capabilities.map(capabilityText)].filter(Boolean).join(' . '),
    c: [s.description, ...(s.sampleNeeds ?? [])].join(' . '),
    d: [schemaText(s.inputSchema), schemaText(s.outputSchema), ...s.examples.map((e) => e.description ?? '')].filter(Boolean).join(' . ').slice(0, MAX_D_CHARS),
  };
}

/** Splits identifiers into words: camelCase, snake_case, kebab-case, dotted and digits. */
export function words(identifier: string): string {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/[_\-./:]+/g, ' ')
    .trim();
}

/** Every string value of a capability descriptor (names, descriptions, formats…), keys split into words. */
function capabilityText(cap: Record<string, unknown>): string {
  const out: string[] = [];
  collectStrings(cap, out, 0);
  return out.join(' ');
}

function collectStrings(v: unknown, out: string[], depth: number): void {
  if (depth > 6 || out.length > 200) return;
  if (typeof v === 'string') out.push(words(v));
  else if (Array.isArray(v)) for (const x of v) collectStrings(x, out, depth + 1);
  else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push(words(k));
      collectStrings(x, out, depth + 1);
    }
  }
}

/** Property names (as words), titles and descriptions anywhere in a schema. */
export function schemaText(schema: unknown): string {
  const out: string[] = [];
  visitSchema(schema, 0, (node, propertyName) => {
    if (propertyName) out.push(words(propertyName));
    if (typeof node.title === 'string') out.push(node.title);
    if (typeof node.description === 'string') out.push(node.description);
  });
  return out.join(' . ');
}

/** Walks the subschemas of a schema (properties, items, combinators, $defs), bounded in depth and breadth. */
export function visitSchema(schema: unknown, depth: number, visit: (node: Record<string, unknown>, propertyName?: string) => void, propertyName?: string): void {
  if (!isObject(schema) || depth > 12) return;
  visit(schema, propertyName);
  const props = schema.properties;
  if (isObject(props)) for (const [name, child] of Object.entries(props).slice(0, 200)) visitSchema(child, depth + 1, visit, name);
  for (const key of ['items', 'additionalProperties', 'contains', 'not', 'if', 'then', 'else']) visitSchema(schema[key], depth + 1, visit);
  for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) {
    const list = schema[key];
    if (Array.isArray(list)) for (const child of list.slice(0, 50)) visitSchema(child, depth + 1, visit);
  }
  const defs = schema.$defs;
  if (isObject(defs)) for (const child of Object.values(defs).slice(0, 100)) visitSchema(child, depth + 1, visit);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Lower-case words of at least three letters, for the typo vocabulary. */
export function vocabularyOf(text: SearchText): string[] {
  const set = new Set<string>();
  for (const part of [text.a, text.b, text.c, text.d]) {
    for (const w of part.toLowerCase().split(/[^\p{L}\p{N}]+/u)) if (w.length >= 3 && w.length <= 40 && !/^\d+$/.test(w)) set.add(w);
  }
  return [...set];
}
