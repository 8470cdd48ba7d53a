import { CompiledQuery, sql, type Kysely, type OperationNodeSource } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * A step's one guarded write, made by the transaction's last statement (`UnitOfWork.flush`): its
 * data-modifying parts, in order, as common table expressions of that statement (`name as (query)`,
 * names other than the unit of work's own: recorded, written, scheduled, cancelled, guard). The part
 * named `guard` must write — and return — a row when the step's condition holds (the row still the
 * version decided on, the money still there); every other part must write nothing when it writes
 * none (on `exists (select 1 from guard)`, or from the guard's rows). The statement's other writes
 * (messages, timers, the consumed message's record) are made on that condition too, so a guard that
 * finds nothing leaves the whole statement — and the `COMMIT` sent with it — writing nothing, with no
 * error raised (`GuardFoundNothing`). A transaction whose last statement carries such a write writes
 * nothing before it: its queries read, and may lock.
 */
export interface GuardedWrite<R> {
  parts: Array<[name: string, query: OperationNodeSource | CompiledQuery]>;
  guard: string;
  /** Typing only: the rows the guard part returns. */
  readonly rows?: R;
}

/**
 * A guarded write (`GuardedWrite`) wrote nothing: neither did the rest of its statement, so its
 * transaction keeps nothing. Whoever gave the write decides again on what it then reads.
 */
export class GuardFoundNothing extends Error {
  constructor(readonly guard: string) {
    super(`the guarded write ${guard} wrote nothing; its transaction was undone`);
  }
}

/**
 * Statement parts as common table expressions (`name as (query)`), their parameters appended to
 * `params` and renumbered after those already there (Kysely writes a parameter only as `$n`).
 */
export function partsOf(db: AnyDb, parts: GuardedWrite<unknown>['parts'], params: unknown[]): string[] {
  return parts.map(([name, query]) => {
    const own = isCompiled(query) ? query : sql`${query}`.compile(db);
    const offset = params.length;
    params.push(...own.parameters);
    return `${quoted(name)} as (${offset === 0 ? own.sql : own.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
}

/**
 * Makes a guarded write at once, as a statement of its own in `trx`: the rows its guard part
 * returned, none when its condition did not hold (nothing of it written, the transaction going on).
 * The same statement as the unit of work's flush sends with the commit, without the rest.
 */
export async function executeWrite<R>(trx: AnyDb, write: GuardedWrite<R>): Promise<R[]> {
  const params: unknown[] = [];
  const ctes = partsOf(trx, write.parts, params);
  const { rows } = await trx.executeQuery<R>(CompiledQuery.raw(`with ${ctes.join(', ')} select * from ${quoted(write.guard)}`, params));
  return rows;
}

export const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

const isCompiled = (q: OperationNodeSource | CompiledQuery): q is CompiledQuery => 'sql' in q && 'parameters' in q;
