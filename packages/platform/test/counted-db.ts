import pg from 'pg';
import { CamelCasePlugin, Kysely, sql } from 'kysely';
import { ServiceDialect } from '../src/db/driver.js';
import { PreparingClient } from '../src/db/prepared.js';

/** A service's database on one connection, counting what it sends (`countedDb`). */
export interface CountedDb<DB> {
  db: Kysely<DB>;
  /** Round trips so far: the ReadyForQuery messages the connection waited for. */
  roundTrips(): number;
  /**
   * The statements given to the connection's client so far, in order: a `BEGIN` or `COMMIT` the
   * client sends with another statement, or queues on its own behind one, is not among them.
   */
  statements: string[];
  /** What Postgres answered with an ErrorResponse or a NoticeResponse (a warning) so far: what its log shows of this connection. */
  complaints: string[];
  close(): Promise<void>;
}

/**
 * Kysely on a pool of one connection made as a service's pool is (`connectServiceDb`: the service's
 * dialect, its client, its schema and role, camel-cased columns), whose round trips and statements a
 * test counts. The schema and role must exist (a `connectServiceDb` made them).
 */
export async function countedDb<DB>(opts: { url: string; schema: string; role: string; preparedStatements?: boolean }): Promise<CountedDb<DB>> {
  let roundTrips = 0;
  const statements: string[] = [];
  const complaints: string[] = [];
  const Client = opts.preparedStatements === false ? pg.Client : PreparingClient;
  const pool = new pg.Pool({ Client, connectionString: opts.url, max: 1, options: `-c search_path=${opts.schema} -c role=${opts.role}` });
  pool.on('connect', (client) => {
    // As the service's pools do: a connection ended while it closes (a test database dropped with
    // force right after the pool ended) emits 'error', which with no listener would end the process.
    client.on('error', () => undefined);
    const connection = (client as unknown as { connection: pg.Connection }).connection;
    connection.on('readyForQuery', () => roundTrips++);
    for (const kind of ['errorMessage', 'notice'] as const) {
      connection.on(kind, (m: { severity?: string; message?: string }) => complaints.push(`${m.severity ?? kind}: ${m.message ?? ''}`));
    }
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      if (typeof args[0] === 'string') statements.push(args[0]);
      return query(...args);
    }) as typeof client.query;
  });
  const db = new Kysely<DB>({ dialect: new ServiceDialect(pool), plugins: [new CamelCasePlugin({ maintainNestedObjectKeys: true })] });
  // Connected now, so that no count includes the connection's start.
  await sql`select 1`.execute(db);
  statements.length = 0;
  return { db, statements, complaints, roundTrips: () => roundTrips, close: () => db.destroy() };
}
