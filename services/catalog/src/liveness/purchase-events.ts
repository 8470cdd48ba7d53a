import { sql, type Transaction } from 'kysely';
import { transactionEvent, type MessageData, type TransactionStatus } from '@aex/contracts';
import { consumeIdempotently, type Stoppable } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { reevaluate } from './provider-liveness.js';

type TransactionFacts = MessageData<ReturnType<typeof transactionEvent>>;

/** The events that say whether a purchase was delivered (D22.3); `settled` and `disputed` come only after `delivered`. */
const RECORDED = ['funds_held', 'delivered', 'failed', 'expired', 'cancelled'] as const satisfies readonly TransactionStatus[];
type Recorded = (typeof RECORDED)[number];

/** Statuses a purchase may be cancelled from with its price held: a cancellation from them ends a paid purchase undelivered. */
const HELD: readonly (TransactionStatus | null)[] = ['funds_held', 'executing', 'validation_failed'];

/**
 * D22.3: the catalog learns which providers deliver from the transactions service's
 * `transaction.<status>` events, one durable consumer per status, each event applied once
 * (`consumeIdempotently`: its record commits with its effect). Consumers are independent, so a
 * purchase's events may arrive in any order: each sets only its own columns of the purchase's row,
 * and the verdict is made from whatever the row holds when the provider is evaluated.
 */
export async function startPurchaseRecorder(deps: CatalogDeps): Promise<Stoppable> {
  const consumers = await Promise.all(RECORDED.map((status) => consumeIdempotently({
    bus: deps.bus, tx: deps.tx, logger: deps.logger,
    durable: `catalog-liveness-${status.replace('_', '-')}`,
    def: transactionEvent(status),
    handle: async (trx, e, work, env) => record(trx, status, e, new Date(env.occurredAt), deps.now()),
  })));
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/** Writes what the event says of the purchase, then evaluates its provider again when that may change its liveness. */
async function record(trx: Transaction<Database>, status: Recorded, e: TransactionFacts, at: Date, now: Date): Promise<void> {
  if (status === 'cancelled' && !HELD.includes(e.previousStatus)) return; // never paid for: nothing to deliver
  const row = await trx.insertInto('providerPurchases')
    .values({ transactionId: e.transactionId, providerAgentId: e.providerAgentId, serviceId: e.serviceId, ...factOf(status, e, at) })
    // A fact told again (a repeated hold after an approval, say) keeps the first time it was true.
    .onConflict((oc) => oc.column('transactionId').doUpdateSet((eb) => status === 'funds_held'
      ? { heldAt: eb.fn.coalesce('providerPurchases.heldAt', 'excluded.heldAt'), dueAt: eb.fn.coalesce('providerPurchases.dueAt', 'excluded.dueAt') }
      : status === 'delivered'
        ? { deliveredAt: eb.fn.coalesce('providerPurchases.deliveredAt', 'excluded.deliveredAt') }
        : { endedAt: eb.fn.coalesce('providerPurchases.endedAt', 'excluded.endedAt'), endedAs: eb.fn.coalesce('providerPurchases.endedAs', 'excluded.endedAs') }))
    .returning(['deliveredAt', 'endedAt', 'dueAt'])
    .executeTakeFirstOrThrow();
  // A hold alone is neutral until its SLA passes, which the sweep sees — unless the purchase's end
  // came first, or the hold is told so late that its SLA has passed already.
  if (status === 'funds_held' && row.deliveredAt === null && row.endedAt === null && (row.dueAt === null || row.dueAt > now)) return;
  await reevaluate(trx, e.providerAgentId, now);
}

/**
 * The event's fact as columns. A purchase is due `sla.maxLatencyMs` after its hold: the SLA is the
 * service's as the catalog has it when the hold is recorded (the event does not carry the purchase's
 * contract revision); a service the catalog does not know leaves it without a due time, never overdue.
 */
function factOf(status: Recorded, e: TransactionFacts, at: Date) {
  switch (status) {
    case 'funds_held':
      return { heldAt: at, dueAt: sql<Date>`${at}::timestamptz + make_interval(secs => (select max_latency_ms from services where id = ${e.serviceId}::uuid) / 1000.0)` };
    case 'delivered':
      return { deliveredAt: at };
    default:
      return { endedAt: at, endedAs: status };
  }
}
