import { randomUUID } from 'node:crypto';
import { isAppError } from '@aex/contracts';
import { sql, type ExpressionBuilder } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';

/**
 * D23.1: `q` of a list of transactions — those whose service name or provider name contains the
 * text, case-insensitively; `%`, `_` and `\` are the characters themselves, not LIKE's wildcards.
 */
export function namedLike(text: string) {
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return (eb: ExpressionBuilder<Database, 'transactions'>) =>
    eb.or([sql<boolean>`service_name ilike ${pattern} escape '\\'`, sql<boolean>`provider_name ilike ${pattern} escape '\\'`]);
}

/** Services whose purchases are named per pass, and purchases named per statement. */
const SERVICES_PER_BATCH = 20;
const ROWS_PER_UPDATE = 500;

/**
 * D23.1: purchases (and prepaid sessions) made before their names were kept get them from the
 * catalog, in the background:
 * a batch of services at a time, each service's names asked once and written in bounded updates of
 * the purchases still without (`where service_name is null`, so two replicas doing it at once write
 * the same names once, and a purchase that has its names keeps them). A service the catalog does not
 * know is left unnamed and not asked again by this replica; a catalog that does not answer ends the
 * pass, tried again at the next.
 */
export class NameBackfill {
  private readonly unknown = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: Pick<TransactionDeps, 'db' | 'contracts' | 'logger'>, private readonly everyMs = 60_000) {}

  start(): void {
    const tick = () => {
      void this.run().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, this.everyMs).unref();
      });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass until no purchase this replica can name is left; how many purchases it named. */
  run(): Promise<number> {
    this.running ??= this.pass().catch((err: unknown) => {
      this.deps.logger.warn({ err }, 'naming older purchases failed; tried again later');
      return 0;
    }).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async pass(): Promise<number> {
    return (await this.name('transactions')) + (await this.name('sessions'));
  }

  /** Names the rows of `table` still without (purchases and prepaid sessions alike: both keep the same three columns). */
  private async name(table: 'transactions' | 'sessions'): Promise<number> {
    // The same columns in both tables: typed as one of them.
    const rows = table as 'transactions';
    let named = 0;
    for (;;) {
      const skip = [...this.unknown];
      const services = await this.deps.db.selectFrom(rows).select('serviceId').distinct()
        .where('serviceName', 'is', null)
        .$if(skip.length > 0, (q) => q.where('serviceId', 'not in', skip))
        .limit(SERVICES_PER_BATCH).execute();
      if (services.length === 0) return named;
      for (const { serviceId } of services) {
        const contract = await this.deps.contracts.current(serviceId, randomUUID()).catch((err: unknown) => {
          if (isAppError(err) && err.code === 'NOT_FOUND') return null;
          throw err;
        });
        if (!contract) {
          this.unknown.add(serviceId);
          continue;
        }
        for (;;) {
          const { numUpdatedRows } = await this.deps.db.updateTable(rows)
            .set({ serviceName: contract.name, providerName: contract.providerName })
            .where('id', 'in', (eb) => eb.selectFrom(rows).select('id').where('serviceId', '=', serviceId).where('serviceName', 'is', null).limit(ROWS_PER_UPDATE))
            .where('serviceName', 'is', null)
            .executeTakeFirst();
          named += Number(numUpdatedRows);
          if (Number(numUpdatedRows) < ROWS_PER_UPDATE) break;
        }
      }
    }
  }
}
