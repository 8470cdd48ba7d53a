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
 * The parts of node-postgres's `Client` that pipelining a `BEGIN` and a `COMMIT` needs (pg 8.16,
 * `lib/client.js`): its queue, its connection and the handlers of the messages they are answered with. They are not
 * in pg's typings; `prepared.int.test.ts` runs them against the installed version.
 */
interface ClientInternals {
  readyForQuery: boolean;
  queryQueue: unknown[];
  connection: {
    stream: { cork(): void; uncork(): void };
    parse(query: { text: string; name: string; types: unknown[] }): void;
    bind(config: { portal: string; statement: string; values: unknown[] }): void;
    execute(config: { portal: string; rows: number }): void;
    sync(): void;
  };
  _pulseQueryQueue(): void;
  _handleParseComplete(msg: unknown): void;
  _handleCommandComplete(msg: unknown): void;
  _handleErrorMessage(msg: unknown): void;
}
const base = pg.Client.prototype as unknown as ClientInternals;

/**
 * A node-postgres client for every service pool (docs/performance.md). The service's driver
 * (`driver.ts`) asks for each saving explicitly; statements are never told apart by their text.
 *
 * - **Prepared statements.** A parameterised statement runs as a named prepared statement, the name
 *   derived from its text, so Postgres parses and plans it once per connection and each call sends
 *   only Bind and Execute. Statements without parameters (DDL, several statements in one text) keep
 *   the simple protocol.
 * - **A pipelined `BEGIN`** (`deferBegin`). The transaction's `BEGIN` is sent in the same write as
 *   its first statement, as Parse, Bind and Execute without a Sync: a transaction costs one round
 *   trip less. Without a Sync, Postgres skips everything up to the statement's own Sync when the
 *   `BEGIN` fails, so the statement never runs outside the transaction; the caller gets the error
 *   from that statement. A first statement without parameters (it may be several statements, which
 *   the extended protocol cannot carry) is sent after a `BEGIN` of its own. A transaction that sent
 *   nothing ends without a word (`endUnsent`).
 * - **A pipelined `COMMIT`** (`queryThenCommit`). The statement is sent with Parse, Bind and
 *   Execute of a `COMMIT` behind it, before its Sync: the transaction commits in the statement's
 *   round trip. When the statement fails, Postgres skips the `COMMIT`; the caller rolls back as
 *   usual. A transaction of one such statement costs one round trip, `BEGIN` and `COMMIT` included.
 *
 * Not for a pool behind a transaction-mode PgBouncer older than 1.21, which cannot keep prepared
 * statements: `DATABASE_PREPARED_STATEMENTS=false` (D16, README "Configuration") uses plain clients.
 */
export class PreparingClient extends pg.Client {
  /** A transaction was begun and nothing sent yet: its `BEGIN` goes with the next statement. */
  #beginDeferred = false;
  /** The next statement the queue submits goes out behind a `BEGIN`. */
  #beginAhead = false;
  /** Answers of a pipelined `BEGIN` still to come before its statement's own. */
  #beginAnswers: 'none' | 'parse' | 'command' = 'none';
  /** The next statement the queue submits goes out with a `COMMIT` behind it. */
  #commitBehind = false;
  /** Where the answers of a statement with a pipelined `COMMIT` are: its own, then the `COMMIT`'s. */
  #commitAnswers: 'none' | 'statement' | 'parse' | 'command' = 'none';
  /** The pipelined `COMMIT` of the last `queryThenCommit` was answered. */
  #committed = false;

  /** Begins a transaction without a round trip: its `BEGIN` goes out with the transaction's first statement. */
  deferBegin(): void {
    this.#beginDeferred = true;
  }

  /**
   * Ends a transaction that has sent nothing yet (its `BEGIN` still deferred), with nothing sent:
   * true when that was so, false when the transaction is open in Postgres and must be ended there.
   */
  endUnsent(): boolean {
    const unsent = this.#beginDeferred;
    this.#beginDeferred = false;
    return unsent;
  }

  /**
   * Runs `text` as the transaction's last statement and commits it in the same round trip. When the
   * `COMMIT` could not go with it (no parameters, or other statements still queued), it is sent
   * right after. A failed statement leaves the transaction open and failed: roll it back.
   */
  async queryThenCommit<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    this.#committed = false;
    const pipelined = values.length > 0 && this.#idle();
    if (pipelined) this.#commitBehind = true;
    const result = (await this.query(text, values)) as pg.QueryResult<R>;
    if (!this.#committed) await this.query('commit');
    this.#committed = false;
    return result;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const asGiven = () => (super.query as any)(...args);
    if (!isPromiseQuery(args)) {
      if (!this.#beginDeferred) return asGiven();
      this.#beginDeferred = false;
      return this.#afterBegin(asGiven, args);
    }
    const [text, values] = args;
    const name = preparedName(text, values.length);
    const run = () => (name === undefined ? super.query(text, values) : super.query({ name, text, values }));
    if (!this.#beginDeferred) return run();
    this.#beginDeferred = false;
    if (values.length === 0 || !this.#idle()) return this.#afterBegin(run);
    this.#beginAhead = true;
    return run();
  }

  /** Nothing is running or queued: a statement given now is the next one written. */
  #idle(): boolean {
    const self = this as unknown as ClientInternals;
    return self.readyForQuery && self.queryQueue.length === 0;
  }

  /**
   * A statement that cannot follow a pipelined `BEGIN` (no parameters, or others still queued) is
   * queued right behind a `BEGIN` of its own, so the order of calls is kept. A failed `begin` is the
   * statement's error.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  #afterBegin(run: () => any, args?: any[]): any {
    let failed: Error | undefined;
    // A callback runs as its answer is read, so `failed` is known before the statement's answer is.
    super.query('begin', (err: Error | undefined) => void (failed = err ?? undefined));
    const callback: unknown = args?.at(-1);
    if (args && typeof callback === 'function') {
      args[args.length - 1] = (err: Error | undefined, result: unknown) => callback(failed ?? err, result);
      run();
      return undefined;
    }
    return (run() as Promise<unknown>).then(
      (result) => {
        if (failed) throw failed;
        return result;
      },
      (err: unknown) => {
        throw failed ?? err;
      },
    );
  }

  /**
   * Writes the pipelined `BEGIN` ahead of the statement the queue submits and the pipelined `COMMIT`
   * behind it (before its Sync), all in one write.
   */
  _pulseQueryQueue(): void {
    const self = this as unknown as ClientInternals;
    if ((!this.#beginAhead && !this.#commitBehind) || !self.readyForQuery || self.queryQueue.length === 0) return base._pulseQueryQueue.call(this);
    const connection = self.connection;
    const unnamed = () => {
      connection.bind({ portal: '', statement: '', values: [] });
      connection.execute({ portal: '', rows: 0 });
    };
    const { sync } = connection;
    let commitSent = false;
    connection.stream.cork();
    try {
      if (this.#beginAhead) {
        this.#beginAhead = false;
        this.#beginAnswers = 'parse';
        connection.parse({ text: 'begin', name: '', types: [] });
        unnamed();
      }
      if (this.#commitBehind) {
        this.#commitBehind = false;
        this.#commitAnswers = 'statement';
        connection.sync = () => {
          connection.parse({ text: 'commit', name: '', types: [] });
          unnamed();
          sync.call(connection);
          commitSent = true;
        };
      }
      base._pulseQueryQueue.call(this);
    } finally {
      // The statement was refused before it was written: no COMMIT went, none is answered.
      if (!commitSent) this.#commitAnswers = 'none';
      connection.sync = sync;
      connection.stream.uncork();
    }
  }

  /** ParseCompletes of a pipelined `BEGIN` or `COMMIT` are not their statement's (that would mark it parsed). */
  _handleParseComplete(msg: unknown): void {
    if (this.#beginAnswers === 'parse') this.#beginAnswers = 'command';
    else if (this.#commitAnswers === 'parse') this.#commitAnswers = 'command';
    else base._handleParseComplete.call(this, msg);
  }

  _handleCommandComplete(msg: unknown): void {
    if (this.#beginAnswers === 'command') {
      this.#beginAnswers = 'none';
    } else if (this.#commitAnswers === 'command') {
      this.#commitAnswers = 'none';
      this.#committed = true;
    } else {
      if (this.#commitAnswers === 'statement') this.#commitAnswers = 'parse';
      base._handleCommandComplete.call(this, msg);
    }
  }

  /**
   * A failed `BEGIN` is its statement's error: Postgres skipped the statement. A failed statement
   * had its `COMMIT` skipped; a failed `COMMIT` (a deferred constraint, a serialization failure)
   * ended the transaction, and is the statement's error too.
   */
  _handleErrorMessage(msg: unknown): void {
    this.#beginAnswers = 'none';
    this.#commitAnswers = 'none';
    base._handleErrorMessage.call(this, msg);
  }
}

type PromiseQuery = [text: string, values: unknown[]];
const isPromiseQuery = (args: unknown[]): args is PromiseQuery => args.length === 2 && typeof args[0] === 'string' && Array.isArray(args[1]);
