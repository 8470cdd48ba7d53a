import { RecentMap } from '@aex/platform';
import type { TransactionRow } from '../db/schema.js';

/** A transaction row with its version: Postgres's `xmin` of the row as read or written. */
export type VersionedRow = TransactionRow & { version: string };
/**
 * What this replica keeps of a row: everything a saga step or a request decides on, without the
 * parts whose size the caller chooses (input, output, metadata: up to a MiB each).
 */
export type KnownRow = Omit<VersionedRow, 'input' | 'output' | 'metadata'>;

/**
 * The latest version of the transactions this replica wrote or read lately (docs/performance.md):
 * a request or a saga step decides on it instead of reading the row again under lock, and makes its
 * write conditional on the version (`runStep`; docs/transactions.md "One step"). When the row
 * has moved on since — another replica, a timer, a write that rolled back — the write finds nothing,
 * and the step is made again on the row locked. So it is a hint, never an answer: nothing is told to
 * a caller from it that a write guarded by its version did not confirm.
 */
export class KnownTransactions {
  private readonly rows: RecentMap<string, KnownRow>;

  constructor(max = 2_048) {
    this.rows = new RecentMap(max);
  }

  remember(row: VersionedRow | KnownRow): void {
    const { input: _input, output: _output, metadata: _metadata, ...known } = row as VersionedRow;
    this.rows.set(row.id, known);
  }

  get(id: string): KnownRow | undefined {
    return this.rows.get(id);
  }

  get size(): number {
    return this.rows.size;
  }
}
