import { isObject } from './search-text.js';

/** The top level of an object schema: property name → JSON types it allows ('any' when unconstrained). */
export interface IoSignature {
  properties: Map<string, Set<string>>;
  required: string[];
}

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);

/** Reads the signature of a schema's top level, merging `allOf` branches (the usual way to compose objects). */
export function ioSignature(schema: unknown): IoSignature {
  const sig: IoSignature = { properties: new Map(), required: [] };
  const visit = (node: unknown, depth: number) => {
    if (!isObject(node) || depth > 4) return;
    if (Array.isArray(node.required)) for (const r of node.required) if (typeof r === 'string' && !sig.required.includes(r)) sig.required.push(r);
    if (isObject(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) {
        const types = schemaTypes(child);
        const prev = sig.properties.get(name);
        sig.properties.set(name, prev ? new Set([...prev, ...types]) : types);
      }
    }
    if (Array.isArray(node.allOf)) for (const branch of node.allOf) visit(branch, depth + 1);
  };
  visit(schema, 0);
  return sig;
}

/** The JSON types a (sub)schema admits, from `type`, `const` or `enum`; {'any'} when it says nothing. */
export function schemaTypes(schema: unknown): Set<string> {
  if (!isObject(schema)) return new Set(['any']);
  const t = schema.type;
  if (typeof t === 'string' && JSON_TYPES.has(t)) return new Set([t]);
  if (Array.isArray(t)) {
    const set = new Set(t.filter((x): x is string => typeof x === 'string' && JSON_TYPES.has(x)));
    if (set.size) return set;
  }
  if ('const' in schema) return new Set([valueType(schema.const)]);
  if (Array.isArray(schema.enum) && schema.enum.length) return new Set(schema.enum.map(valueType));
  return new Set(['any']);
}

/** The JSON type of a value; integers are `integer` (which every `number` accepts). */
export function valueType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'string' || typeof v === 'boolean' || typeof v === 'object' ? typeof v : 'any';
}

/** Whether a value of type `wanted` fits a property allowing `allowed` (an integer is a number). */
export function typeFits(wanted: string, allowed: Set<string>): boolean {
  return wanted === 'any' || allowed.has('any') || allowed.has(wanted) || (wanted === 'integer' && allowed.has('number'));
}

/**
 * D8.3 input compatibility: 1 when the inputSchema accepts the consumer's input (`accepted`, from the
 * compiled validator), otherwise the fraction of required input properties it supplies with a
 * fitting value. `faulty` names properties the validator found wrong values in. A schema requiring
 * nothing yet refusing the input scores the share of supplied properties it declares.
 */
export function inputCompatibility(sig: IoSignature, input: Record<string, unknown>, check?: { accepted: boolean; faulty: Set<string> }): number {
  if (check?.accepted) return 1;
  const supplied = (name: string) => {
    if (!(name in input) || check?.faulty.has(name)) return false;
    return typeFits(valueType(input[name]), sig.properties.get(name) ?? new Set(['any']));
  };
  if (sig.required.length > 0) return sig.required.filter(supplied).length / sig.required.length;
  const keys = Object.keys(input);
  if (!check || keys.length === 0) return 1;
  return keys.filter((k) => sig.properties.has(k) && supplied(k)).length / keys.length;
}

/** What the consumer needs out: a JSON Schema (its properties and types) or an example object (its keys and value types). */
export function requiredOutput(outputRequired: Record<string, unknown>): Map<string, string> {
  const looksLikeSchema = isObject(outputRequired.properties) && (outputRequired.type === 'object' || outputRequired.type === undefined || '$schema' in outputRequired);
  const out = new Map<string, string>();
  if (looksLikeSchema) {
    for (const [name, child] of Object.entries(outputRequired.properties as Record<string, unknown>)) {
      const types = [...schemaTypes(child)];
      out.set(name, types.length === 1 ? types[0]! : 'any');
    }
  } else {
    for (const [name, v] of Object.entries(outputRequired)) out.set(name, valueType(v));
  }
  return out;
}

/** D8.3 output compatibility: the fraction of the required properties (name and type) the outputSchema provides. */
export function outputCompatibility(sig: IoSignature, wanted: Map<string, string>): number {
  if (wanted.size === 0) return 1;
  let provided = 0;
  for (const [name, type] of wanted) {
    const allowed = sig.properties.get(name);
    if (!allowed) continue;
    // The provider may answer with any of its allowed types: all of them must fit what is wanted.
    if ([...allowed].every((t) => typeFits(t, new Set([type])))) provided += 1;
  }
  return provided / wanted.size;
}
