import { createHash } from 'node:crypto';
import pg from 'pg';

/** At most this many statements are prepared per connection; any others run unnamed. */
export const MAX_PREPARED = 400;
/** Statements longer than this, or with more parameters, are not worth a plan kept per connection. */
const MAX_TEXT = 8_192;
const MAX_PARAMS = 128;

/**
 * The names given so far, by statement text. Shared by every pool of the process: a text is always
 * given the same name, which is all Postgres needs (a prepared statement lives in its connection).
 */
const names = new Map<string, string>();

/** The name a statement is prepared under, or undefined when it should run unnamed. */
export function preparedName(text: string, paramCount: number): string | undefined {
  if (paramCount === 0 || paramCount > MAX_PARAMS || text.length > MAX_TEXT) return undefined;
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_PREPARED) return known;
  const name = `aex_${createHash('sha1').update(text).digest('base64url').slice(0, 22)}`;
  names.set(text, name);
  return name;
}

/**
 * A node-postgres client that runs every parameterised statement as a named prepared statement
 * (issue 14, docs/performance.md "The lifecycle"). Postgres then parses and plans a statement once per
 * connection instead of once per call, and each call sends only Bind and Execute. Kysely and the
 * services' SQL stay as they are: the name is derived from the text. Statements without parameters
 * (`begin`, `commit`, DDL) keep the simple protocol.
 *
 * Not for a pool behind a transaction-mode PgBouncer older than 1.21, which cannot keep prepared
 * statements: `DATABASE_PREPARED_STATEMENTS=false` (D16, README "Configuration") uses plain clients.
 */
export class PreparingClient extends pg.Client {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    const [text, values] = args;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
      const name = preparedName(text, values.length);
      if (name !== undefined) return super.query({ name, text, values });
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return (super.query as any)(...args);
  }
}
