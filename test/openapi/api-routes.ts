// docs/api-routes.md from the OpenAPI document: every route with what it takes and answers, and every
// resource with its fields. Generated, so it says what the gateway validates (`pnpm openapi` writes
// it; test/openapi/openapi.int.test.ts checks it is current).

interface Schema {
  $ref?: string;
  type?: string | string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  description?: string;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  'x-max-json-bytes'?: number;
}
interface Parameter { $ref?: string; name: string; in: string; required?: boolean; description?: string; schema: Schema }
interface Operation {
  summary: string;
  tags: string[];
  operationId: string;
  parameters: Parameter[];
  security: Record<string, unknown>[];
  requestBody?: { required: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { $ref?: string; description: string; content?: Record<string, { schema: Schema }> }>;
  'x-signature-required'?: boolean;
}
interface Document {
  info: { version: string };
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters: Record<string, Parameter> };
}

const refName = (ref: string) => ref.split('/').pop()!;
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A schema as a short type: `string`, `integer 1..100`, `"a" \| "b"`, `[ServiceView](#serviceview)[]`, `… \| null`. */
export function typeOf(s: Schema | undefined): string {
  if (!s || Object.keys(s).length === 0) return 'any';
  if (s.$ref) return `[${refName(s.$ref)}](#${refName(s.$ref).toLowerCase()})`;
  const variants = s.anyOf ?? s.oneOf;
  if (variants) {
    if (variants.every((v) => v.const !== undefined)) return variants.map((v) => JSON.stringify(v.const)).join(' \\| ');
    return variants.map(typeOf).join(' \\| ');
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  const type = Array.isArray(s.type) ? s.type.join(' \\| ') : s.type;
  if (type === 'array') return `${typeOf(s.items)}[]`;
  if (type === 'object' && !s.properties) return 'object';
  return type ?? 'any';
}

/** Bounds, formats and defaults of a schema, in words. */
export function rulesOf(s: Schema | undefined): string {
  if (!s) return '';
  const rules: string[] = [];
  if (s.format) rules.push(s.format);
  if (s.minimum !== undefined && s.maximum !== undefined) rules.push(`${s.minimum}..${s.maximum}`);
  else if (s.minimum !== undefined) rules.push(`≥ ${s.minimum}`);
  else if (s.maximum !== undefined) rules.push(`≤ ${s.maximum}`);
  if (s.minLength !== undefined || s.maxLength !== undefined) rules.push(`${s.minLength ?? 0}..${s.maxLength ?? '∞'} characters`);
  if (s.minItems !== undefined || s.maxItems !== undefined) rules.push(`${s.minItems ?? 0}..${s.maxItems ?? '∞'} items`);
  if (s['x-max-json-bytes'] !== undefined) rules.push(`≤ ${s['x-max-json-bytes']} bytes as JSON`);
  if (s.pattern && !s.format) rules.push(`pattern \`${s.pattern}\``);
  if (s.default !== undefined) rules.push(`default ${JSON.stringify(s.default)}`);
  const text = [rules.join(', '), s.description].filter(Boolean).join('. ');
  return cell(text);
}

function fieldsTable(s: Schema, doc: Document): string[] {
  const target = s.$ref ? doc.components.schemas[refName(s.$ref)]! : s;
  if (!target.properties) return [`A ${typeOf(s)}.`];
  const lines = ['| field | type | required | rules |', '|---|---|---|---|'];
  // Inline objects are flattened to dotted names (`agent.name`, `tiers[].unitPriceCents`).
  const rows = (schema: Schema, prefix: string, depth: number) => {
    const required = new Set(schema.required ?? []);
    for (const [name, p] of Object.entries(schema.properties ?? {})) {
      const path = `${prefix}${name}`;
      const inner = inlineObject(p);
      lines.push(`| \`${path}\` | ${inner && depth < 3 ? (inner.array ? 'object[]' : 'object') : typeOf(p)} | ${required.has(name) ? 'yes' : ''} | ${rulesOf(p)} |`);
      if (inner && depth < 3) rows(inner.schema, `${path}${inner.array ? '[]' : ''}.`, depth + 1);
    }
  };
  rows(target, '', 0);
  if (target.additionalProperties === false) lines.push('', 'Other fields are refused (400 `VALIDATION_ERROR`, naming the closest allowed one).');
  return lines;
}

/** An inline object with named properties (directly, as array items, or beside null), to flatten. */
function inlineObject(p: Schema): { schema: Schema; array: boolean } | undefined {
  const nonNull = (p.anyOf ?? []).filter((v) => v.type !== 'null');
  const s = nonNull.length === 1 ? nonNull[0]! : p;
  if (s.properties) return { schema: s, array: false };
  if (s.type === 'array' && s.items?.properties) return { schema: s.items, array: true };
  return undefined;
}

export function apiRoutesMarkdown(doc: Document): string {
  const out: string[] = [
    '# API routes',
    '',
    `Every route of the exchange (version ${doc.info.version}), generated from the OpenAPI document (\`/v1/openapi.json\`,`,
    '[`openapi.json`](openapi.json)): what each takes and answers. The concepts — envelope, errors, keys, signatures,',
    'idempotency, limits, the purchase\'s states, fees, webhooks — are in [api.md](api.md).',
    '',
    'Every answer carries `X-Request-Id`. Every JSON answer is the envelope `{ data, meta, errors }`; "answers" below names',
    'the type of `data`. Every route may also answer `500 INTERNAL_ERROR`; routes served by a service `503 SERVICE_UNAVAILABLE`.',
    '',
  ];
  for (const tag of doc.tags) {
    out.push(`## ${tag.name[0]!.toUpperCase()}${tag.name.slice(1)}`, '', `${tag.description}.`, '');
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (op.tags[0] !== tag.name) continue;
        out.push(`### ${method.toUpperCase()} ${path}`, '', `${op.summary}.`, '');
        const auth = op.security.length === 0 ? 'none (limited per client IP)' : 'apiKey' in op.security[0]! ? 'agent API key (`Authorization: Bearer ae_live_…`)' : 'operator token (`Authorization: Bearer <ADMIN_TOKEN>`)';
        const refs = op.parameters.filter((p) => p.$ref).map((p) => refName(p.$ref!));
        const facts = [`**Auth**: ${auth}`];
        if (refs.includes('SignatureRequired')) facts.push('**Signature**: required ([signing.md](signing.md))');
        else if (refs.includes('Signature')) facts.push('**Signature**: optional, verified when present');
        if (refs.includes('IdempotencyKey')) facts.push('**Idempotency-Key**: accepted');
        out.push(facts.join(' · '), '');
        const params = op.parameters.filter((p) => !p.$ref);
        if (params.length > 0) {
          out.push('| parameter | in | type | required | rules |', '|---|---|---|---|---|');
          for (const p of params) out.push(`| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${p.required ? 'yes' : ''} | ${rulesOf(p.schema)} |`);
          out.push('');
        }
        const body = op.requestBody?.content['application/json']?.schema;
        if (body) out.push(`**Body**${op.requestBody!.required ? '' : ' (optional)'}:`, '', ...fieldsTable(body, doc), '');
        const answers: string[] = [];
        for (const [status, r] of Object.entries(op.responses)) {
          const schema = r.content && Object.values(r.content)[0]?.schema;
          if (Number(status) < 300) {
            const data = schema?.properties?.data ?? schema;
            answers.push(`- **${status}**: ${status === '202' ? 'accepted, the saga still running; ' : ''}${typeOf(data)}`);
          } else {
            answers.push(`- **${status}**: ${r.description.split(': ').slice(1).join(': ').split(', ').filter((c) => c !== 'INTERNAL_ERROR' && c !== 'SERVICE_UNAVAILABLE').map((c) => `\`${c}\``).join(', ')}`);
          }
        }
        out.push('**Answers**:', '', ...answers.filter((a) => !/\*\*: $/.test(a)), '');
      }
    }
  }
  out.push('## Resources', '', 'The types that requests and answers name.', '');
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    out.push(`### ${name}`, '');
    if (schema.description) out.push(`${schema.description}`, '');
    out.push(...fieldsTable(schema, doc), '');
  }
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}
