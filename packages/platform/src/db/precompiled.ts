import { CompiledQuery, type Compilable, type Kysely, type QueryResult } from 'kysely';

/** Stands for a value of a precompiled query until it runs. */
class Slot {
  constructor(readonly name: string) {}
}

/** The values a precompiled query takes, as its `build` sees them (each stands for its value). */
export type Slots<A> = { readonly [K in keyof A]: A[K] };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * A query that Kysely builds and compiles once, then runs with new values (building and
 * compiling the hot path's queries on every call was a sixth of the exchange's CPU;
 * docs/performance.md). `build` is called once, with slots standing for the values; each slot must
 * be used as one value — a column's value, a comparison's right side, an array compared with
 * `= any(…)` — never as a name, and never spread into a list (`in`), whose length would then be
 * fixed. The text is compiled by the first database or transaction the query runs on; its plugins
 * (the services' CamelCasePlugin) apply to the text and to the rows as with any Kysely query.
 */
export function precompiled<A extends Record<string, unknown>, DB, O>(build: (db: Kysely<DB>, values: Slots<A>) => Compilable<O>): Precompiled<A, DB, O> {
  let compiled: { sql: string; parameters: ReadonlyArray<unknown> } | undefined;
  const slots = new Proxy({} as Slots<A>, { get: (_, name) => new Slot(String(name)) });
  const bind = (db: Kysely<DB>, values: A): CompiledQuery<O> => {
    compiled ??= build(db, slots).compile();
    return CompiledQuery.raw(compiled.sql, compiled.parameters.map((p) => (p instanceof Slot ? values[p.name] : p))) as CompiledQuery<O>;
  };
  return Object.assign((db: Kysely<DB>, values: A) => (db as AnyDb).executeQuery<O>(bind(db, values)), { bind });
}

/** A precompiled query: run it, or `bind` its values to get the compiled query without running it. */
export type Precompiled<A, DB, O> = ((db: Kysely<DB>, values: A) => Promise<QueryResult<O>>) & { bind(db: Kysely<DB>, values: A): CompiledQuery<O> };
