/**
 * D23.5: the TypeScript type of a value a JSON Schema describes, for a schema written `as const` (or
 * passed where a `const` type parameter keeps its literals). The common subset is mapped:
 * `type` (one or a list of `object`, `string`, `number`, `integer`, `boolean`, `array`, `null`),
 * `properties` with `required`, `items`, `enum`, `const`, `anyOf`/`oneOf`. Anything else — a `$ref`,
 * `allOf`, `not`, a schema that is only `true` — is `unknown`, never a guess.
 *
 * ```ts
 * const input = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } as const;
 * type Input = FromSchema<typeof input>;   // { text: string }
 * ```
 */
export type FromSchema<S> = S extends { readonly const: infer C }
  ? C
  : S extends { readonly enum: readonly (infer E)[] }
    ? E
    : S extends { readonly anyOf: readonly (infer A)[] }
      ? FromSchema<A>
      : S extends { readonly oneOf: readonly (infer A)[] }
        ? FromSchema<A>
        : S extends { readonly type: infer T }
          ? T extends readonly (infer Each)[]
            ? FromType<Each, S>
            : FromType<T, S>
          : unknown;

/** The schema's own name of a type, mapped; an unknown name is `unknown`. */
type FromType<T, S> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? S extends { readonly items: infer I } ? FromSchema<I>[] : unknown[]
          : T extends 'object'
            ? FromObject<S>
            : unknown;

/** `properties` listed in `required` are required, the others optional; no `properties`: any object. */
type FromObject<S> = S extends { readonly properties: infer P }
  ? Flat<
      { -readonly [K in keyof P as K extends RequiredOf<S> ? K : never]: FromSchema<P[K]> } & {
        -readonly [K in keyof P as K extends RequiredOf<S> ? never : K]?: FromSchema<P[K]>;
      }
    >
  : Record<string, unknown>;

type RequiredOf<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

/** One object type rather than an intersection, so editors show it whole. */
type Flat<T> = { [K in keyof T]: T[K] };
