import type pg from 'pg';
import {
  CompiledQuery, PostgresDialect, createQueryId,
  type DatabaseConnection, type Driver, type QueryResult, type RootOperationNode, type TransactionSettings,
} from 'kysely';
import { PreparingClient } from './prepared.js';

/**
 * A transaction's last statement, after which its transaction commits: the connection sends the
 * `COMMIT` with it when it can (`PreparingClient.queryThenCommit`), and the `commit` Kysely asks for
 * next is then answered without a word. Made by the one who commits right after it (the unit of
 * work's flush); any other statement is an ordinary one, whatever its text.
 */
export class LastStatement implements CompiledQuery {
  readonly queryId = createQueryId();
  readonly query: RootOperationNode;

  /**
   * `guarded`: the statement carries a guarded write (`GuardedWrite`), and writes nothing when its
   * guard writes nothing — its transaction then must keep nothing, so when the transaction wrote
   * before it, its `COMMIT` waits for its answer (`ServiceConnection`).
   */
  constructor(readonly sql: string, readonly parameters: ReadonlyArray<unknown>, readonly guarded = false) {
    this.query = CompiledQuery.raw(sql, [...parameters]).query;
  }
}

/** The commands of statements that write nothing (a `SELECT` may lock rows, which the commit or rollback releases alike). */
const READS = new Set(['SELECT', 'SHOW', 'SET', 'SAVEPOINT', 'RELEASE', 'ROLLBACK', 'LOCK TABLE', 'FETCH', 'DECLARE CURSOR', 'CLOSE CURSOR', 'LISTEN']);

/**
 * One pooled connection as the service's driver uses it. With a `PreparingClient` a transaction's
 * `BEGIN` goes with its first statement and its `COMMIT` with its last (`LastStatement`); with a
 * plain client (`DATABASE_PREPARED_STATEMENTS=false`) both are statements of their own.
 */
class ServiceConnection implements DatabaseConnection {
  /** The open transaction committed with its last statement: its `commit` sends nothing. */
  private committed = false;
  /**
   * A statement of the open transaction may have written (its command is not a read's). A guarded
   * last statement then goes without the `COMMIT`, which follows once it answered — or a `ROLLBACK`,
   * when its guard wrote nothing and whoever sent it undoes the transaction, what came before included.
   */
  private wrote = false;

  constructor(readonly client: pg.PoolClient) {}

  private get preparing(): PreparingClient | undefined {
    return this.client instanceof PreparingClient ? this.client : undefined;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const preparing = this.preparing;
    const last = query instanceof LastStatement && preparing && !(query.guarded && this.wrote);
    const result = last
      ? await preparing.queryThenCommit(query.sql, [...query.parameters])
      : await this.client.query(query.sql, [...query.parameters]);
    if (last) this.committed = true;
    else if (!READS.has(result.command)) this.wrote = true;
    const { command, rowCount, rows } = result;
    const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return { numAffectedRows: changed ? BigInt(rowCount ?? 0) : undefined, rows: (rows ?? []) as R[] };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery(): AsyncIterableIterator<QueryResult<never>> {
    throw new Error('the services do not stream query results');
  }

  async begin(settings: TransactionSettings): Promise<void> {
    this.committed = false;
    this.wrote = false;
    const preparing = this.preparing;
    if (preparing && !settings.isolationLevel && !settings.accessMode) return preparing.deferBegin();
    const modes = [settings.isolationLevel && `isolation level ${settings.isolationLevel}`, settings.accessMode].filter(Boolean).join(' ');
    await this.client.query(modes ? `start transaction ${modes}` : 'begin');
  }

  async end(how: 'commit' | 'rollback'): Promise<void> {
    const committed = this.committed;
    this.committed = false;
    // Nothing was sent in the transaction, or its last statement committed it: a rollback asked for
    // after that (a guarded write that wrote nothing, its statement and so its commit empty) has
    // nothing left to undo, and a `rollback` outside a transaction is a warning in the log.
    if (this.preparing?.endUnsent() || committed) return;
    await this.client.query(how);
  }
}

/**
 * Kysely's driver for a service's pool (`connectServiceDb`): node-postgres, with transactions begun
 * and committed through `ServiceConnection` so that their `BEGIN` and `COMMIT` cost no round trip of
 * their own (docs/performance.md).
 */
class ServiceDriver implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, ServiceConnection>();

  constructor(private readonly pool: pg.Pool) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<ServiceConnection> {
    const client = await this.pool.connect();
    let connection = this.connections.get(client);
    if (!connection) {
      connection = new ServiceConnection(client);
      this.connections.set(client, connection);
    }
    return connection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return (connection as ServiceConnection).begin(settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as ServiceConnection).end('commit');
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as ServiceConnection).end('rollback');
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdentifier(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quoteIdentifier(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quoteIdentifier(name)}`));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as ServiceConnection).client.release();
  }

  async destroy(): Promise<void> {
    await this.pool.end();
  }
}

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Postgres for a service: Kysely's own dialect, with the service's driver (`ServiceDriver`). */
export class ServiceDialect extends PostgresDialect {
  constructor(private readonly servicePool: pg.Pool) {
    super({ pool: servicePool });
  }

  override createDriver(): Driver {
    return new ServiceDriver(this.servicePool);
  }
}
