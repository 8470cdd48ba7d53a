import { ERROR_CODES, Type, type TSchema } from '@aex/contracts';
import type { RouteSpec } from './routes.js';

const plain = (s: TSchema | undefined): unknown => (s === undefined ? undefined : JSON.parse(JSON.stringify(s)));
const isAny = (s: TSchema | undefined) => !s || Object.keys(plain(s) as object).length === 0;

const ErrorEntry = Type.Object({
  code: Type.Union(ERROR_CODES.map((c) => Type.Literal(c))),
  message: Type.String(),
  field: Type.Optional(Type.String({ description: 'JSON Pointer into the request (D1.3)' })),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
const Meta = Type.Object({ requestId: Type.String({ format: 'uuid' }), timestamp: Type.String({ format: 'date-time' }) });

/**
 * OpenAPI 3.1 generated from the route table and the very schemas the gateway and the services
 * validate with (packages/contracts), so the document cannot drift from the behaviour.
 */
export function openApiDocument(routes: RouteSpec[], version: string, serverUrl: string): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z]+)/g, '{$1}');
    const input = r.op?.input.properties as Record<string, TSchema> | undefined;
    const parameters: unknown[] = [];
    for (const [where, part] of [['path', input?.path], ['query', input?.query]] as const) {
      const props = (part as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
      const required = new Set((part as { required?: string[] } | undefined)?.required ?? []);
      for (const [name, schema] of Object.entries(props)) parameters.push({ name, in: where, required: where === 'path' || required.has(name), schema: plain(schema) });
    }
    const data = r.raw ? plain(r.op?.output) : Type.Object({ data: r.op?.output ?? r.output ?? Type.Unknown(), meta: Meta, errors: Type.Null() });
    const operation: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: r.op ? `${r.op.service}.${r.op.name}${r.raw ? 'Raw' : ''}` : `gateway.${r.tag}`,
      parameters,
      security: r.auth === 'agent' ? [{ apiKey: [] }] : r.auth === 'admin' ? [{ operatorToken: [] }] : [],
      responses: {
        [String(r.successStatus)]: { description: 'Success', content: { [r.raw ? 'application/did+json' : 'application/json']: { schema: plain(data as TSchema) } } },
        default: { description: 'Error (D1)', content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } },
      },
    };
    if (r.body && r.op && !isAny(input?.body)) {
      operation.requestBody = { required: r.body === true, content: { 'application/json': { schema: plain(input!.body) } } };
    }
    if (r.signature === 'required') operation['x-signature-required'] = true;
    (paths[path] ??= {})[r.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Agent Exchange', version, description: 'A marketplace where software agents buy and sell machine-callable services.' },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'Agent API key (ae_live_…)' },
        operatorToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN of the deployment' },
      },
      schemas: {
        ErrorEnvelope: plain(Type.Object({ data: Type.Null(), meta: Meta, errors: Type.Array(ErrorEntry) })),
      },
    },
  };
}
