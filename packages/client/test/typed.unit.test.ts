import { describe, expect, expectTypeOf, it } from 'vitest';
import { ExchangeClient, type FromSchema, type Outcome, type TypedTransaction } from '../src/index.js';

// D23.5: the delivery's body is the API's, `{ output, usage? }`; the wrong shape neither compiles nor
// leaves the client. Services whose contract is known are typed by it. The type assertions below are
// checked by `pnpm typecheck` (an unused @ts-expect-error fails it); the runtime ones by vitest.

/** A client whose fetch records what would have been sent, and answers a delivered transaction. */
function recording() {
  const sent: Array<{ url: string; body: unknown }> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url, body: init.body ? JSON.parse(init.body as string) : undefined });
    const data = { id: 't1', status: 'delivered', output: { words: 4 } };
    return new Response(JSON.stringify({ data, errors: [], meta: { requestId: 'r1' } }), { status: 200, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { client: new ExchangeClient({ baseUrl: 'http://exchange.test', apiKey: 'ae_test_x', fetch }), sent };
}

describe('D23.5 deliver takes the body of POST /v1/transactions/{id}/deliver', () => {
  it('sends { output } and { output, usage } as given, with the idempotency key', async () => {
    const { client, sent } = recording();
    await client.deliver('t1', { output: { words: 4 } });
    await client.deliver('t1', { output: { words: 4 }, usage: { units: 3 } }, { idempotencyKey: 'k1' });
    expect(sent.map((s) => s.body)).toEqual([{ output: { words: 4 } }, { output: { words: 4 }, usage: { units: 3 } }]);
    expect(sent[0]!.url).toBe('http://exchange.test/v1/transactions/t1/deliver');
  });

  it('does not compile the old shape, an output outside { output }, or usage among the options', () => {
    const { client } = recording();
    const output = { words: 4 };
    expectTypeOf(client.deliver).parameter(1).toEqualTypeOf<{ output: { [x: string]: unknown }; usage?: { units: number } }>();
    // @ts-expect-error the output itself is not the body
    void (() => client.deliver('t1', output));
    // @ts-expect-error an output that is not an object
    void (() => client.deliver('t1', { output: 'four' }));
    // @ts-expect-error usage goes in the body, beside output
    void (() => client.deliver('t1', { output }, { usage: { units: 3 } }));
    // @ts-expect-error nothing else goes beside output
    void (() => client.deliver('t1', { output, words: 4 }));
  });

  it('rejects any other shape with a TypeError that says the shape, and sends nothing', async () => {
    const { client, sent } = recording();
    const deliver = client.deliver as (id: string, body: unknown, o?: unknown) => Promise<unknown>;
    const refusals: Array<[unknown, unknown, RegExp]> = [
      [{ words: 4 }, undefined, /no output object\. It has "words": an output goes inside \{ output \}/],
      [{ output: { words: 4 }, words: 4 }, undefined, /other keys too: "words"/],
      [{ output: 'four' }, undefined, /no output object/],
      [{ output: [4] }, undefined, /no output object/],
      [{ output: null }, undefined, /no output object/],
      [null, undefined, /not an object/],
      [{ output: { words: 4 }, usage: 3 }, undefined, /usage is \{ units \}/],
      [{ output: { words: 4 } }, { usage: { units: 3 } }, /usage goes in the body/],
    ];
    for (const [body, o, message] of refusals) {
      await expect(deliver('t1', body, o), JSON.stringify(body)).rejects.toThrow(TypeError);
      await expect(deliver('t1', body, o)).rejects.toThrow(message);
      await expect(deliver('t1', body, o)).rejects.toThrow(/deliver\(transactionId, \{ output, usage\? \}, \{ idempotencyKey\? \}\) takes the body of POST \/v1\/transactions\/\{id\}\/deliver/);
    }
    expect(sent).toEqual([]);
  });
});

describe('D23.5 schema-derived types', () => {
  it('maps the common subset of JSON Schema, and anything else to unknown', () => {
    const schema = {
      type: 'object',
      required: ['text', 'mode', 'tags'],
      properties: {
        text: { type: 'string' },
        mode: { enum: ['fast', 'careful'] },
        tags: { type: 'array', items: { type: 'string' } },
        limit: { type: 'integer' },
        ratio: { type: 'number' },
        strict: { type: 'boolean' },
        kind: { const: 'count' },
        note: { type: ['string', 'null'] },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        nested: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        free: { type: 'object' },
        list: { type: 'array' },
        nothing: { type: 'null' },
        referenced: { $ref: '#/$defs/x' },
      },
    } as const;
    type Derived = FromSchema<typeof schema>;
    // Every property of the schema is a key of its type.
    expect(Object.keys(schema.properties).sort()).toEqual((['text', 'mode', 'tags', 'limit', 'ratio', 'strict', 'kind', 'note', 'either', 'nested', 'free', 'list', 'nothing', 'referenced'] satisfies Array<keyof Derived>).sort());
    expectTypeOf<Derived>().toEqualTypeOf<{
      text: string;
      mode: 'fast' | 'careful';
      tags: string[];
      limit?: number;
      ratio?: number;
      strict?: boolean;
      kind?: 'count';
      note?: string | null;
      either?: string | number;
      nested?: { ok: boolean };
      free?: Record<string, unknown>;
      list?: unknown[];
      nothing?: null;
      referenced?: unknown;
    }>();
    expectTypeOf<FromSchema<{ type: 'object' }>>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<FromSchema<true>>().toBeUnknown();
    expectTypeOf<FromSchema<{ allOf: [] }>>().toBeUnknown();
    expectTypeOf<FromSchema<{ type: 'tuple' }>>().toBeUnknown();
  });
});

describe('D23.5 a service handle typed by its contract', () => {
  const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } as const;
  const outputSchema = { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] } as const;

  it('types buy, transaction and deliver by type arguments or by schemas', () => {
    const { client } = recording();
    const byTypes = client.service<{ text: string }, { words: number }>('s1');
    const bySchemas = client.service('s1', { inputSchema, outputSchema });
    expectTypeOf(bySchemas).toEqualTypeOf(byTypes);
    expectTypeOf(byTypes.buy).parameter(0).toEqualTypeOf<{ text: string }>();
    expectTypeOf(byTypes.transaction).returns.resolves.toEqualTypeOf<Outcome<TypedTransaction<{ text: string }, { words: number }>>>();
    expectTypeOf<TypedTransaction<{ text: string }, { words: number }>['output']>().toEqualTypeOf<{ words: number } | null>();
    // @ts-expect-error the input has no text
    void (() => byTypes.buy({ words: 'x' }));
    // @ts-expect-error words is a number
    void (() => bySchemas.deliver('t1', { output: { words: 'four' } }));
    // @ts-expect-error the output itself is not the body
    void (() => bySchemas.deliver('t1', { words: 4 }));
    // Without a contract, any object: the client's own types.
    expectTypeOf(client.service('s1').buy).parameter(0).toEqualTypeOf<Record<string, unknown>>();
  });

  it('sends what the client would: the purchase with the service id, the delivery as { output }', async () => {
    const { client, sent } = recording();
    const counter = client.service('s1', { inputSchema, outputSchema });
    const bought = await counter.buy({ text: 'four words right here' }, { queryId: 'q1' }, { idempotencyKey: 'order-1' });
    const delivered = await counter.deliver('t1', { output: { words: 4 } });
    expect(sent.map((s) => s.body)).toEqual([{ queryId: 'q1', serviceId: 's1', input: { text: 'four words right here' } }, { output: { words: 4 } }]);
    expect(bought.ok && delivered.ok && delivered.data.output?.words).toBe(4);
    const refused = counter.deliver as (id: string, body: unknown) => Promise<unknown>;
    await expect(refused('t1', { words: 4 })).rejects.toThrow(TypeError);
  });
});
