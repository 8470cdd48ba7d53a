import type { Kysely, Transaction } from 'kysely';
import { MessageEnvelope, validator, isAppError, type MessageDef, type Static, type MessageEnvelope as Envelope, type Validator } from '@aex/contracts';
import { ack, nak, term, type Bus, type BusMessage, type Outcome, type Stoppable } from '../bus/types.js';
import { subjects } from '@aex/contracts';
import type { PlatformTables } from '../db/platform-tables.js';
import type { Logger } from '../logger.js';
import { AlreadyApplied } from './processed-messages.js';
import type { Transactor } from './transaction-runner.js';
import type { UnitOfWork } from './unit-of-work.js';
import { exchangeMetrics } from '../metrics.js';

const envelopeCheck = validator(MessageEnvelope);

/**
 * A delivered message's envelope and data, each checked against its contract. One that breaks it is
 * logged, and its outcome is `term`: it would break it again on every delivery, so it is never retried.
 */
export function readMessage<T>(msg: BusMessage, dataCheck: Validator<T>, logger: Logger): { ok: true; envelope: Envelope; data: T } | { ok: false; outcome: Outcome } {
  const env = envelopeCheck.check(msg.data);
  const data = env.ok ? dataCheck.check(env.value.data) : env;
  if (env.ok && data.ok) return { ok: true, envelope: env.value as Envelope, data: data.value };
  logger.error({ subject: msg.subject, errors: data.ok ? [] : data.errors }, 'message failed its contract; terminated');
  return { ok: false, outcome: term('invalid payload') };
}

/** A message whose handling failed, delivered again later: after 200 ms, doubling with each delivery up to 30 s. */
export const retryLater = (msg: BusMessage): Outcome => nak(Math.min(30_000, 200 * 2 ** Math.min(msg.deliveryCount, 7)));

/**
 * Thrown by a handler whose message comes too early — what it waits for is on its way through
 * another consumer, as a session's return waits for its calls' captures (D17.7): nothing is applied,
 * and the message is delivered again soon (after 50 ms, doubling with each delivery up to 5 s),
 * without a warning: nothing failed.
 */
export class NotYet extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotYet';
  }
}

export interface IdempotentConsumerOptions<M extends MessageDef, DB, R = void> {
  bus: Bus;
  /** The service's transactions: the effect, the message's record and what it publishes commit together. */
  tx: Transactor<DB>;
  logger: Logger;
  /** Durable name, unique per (service, purpose). */
  durable: string;
  def: M;
  /** Runs inside the transaction that also records the message id: effect and dedupe commit together. */
  handle: (trx: Transaction<DB>, data: Static<M['data']>, work: UnitOfWork, envelope: Envelope) => Promise<R>;
  /**
   * Called after the commit with what `handle` returned, and awaited before the message is
   * acknowledged. (What only needs the commit, `work.afterCommit`, is the simpler way.)
   */
  afterCommit?: (data: Static<M['data']>, result: R) => void | Promise<void>;
  concurrency?: number;
}

/**
 * Applies a message's effect unless `consumer` already has: the message id is recorded in the same
 * transaction as the effect. Consumers use it, and so does a service handed a message directly
 * (ahead of its delivery through JetStream, which then finds it applied). True when it was applied now.
 */
export function applyOnce<DB>(tx: Transactor<DB>, consumer: string, envelope: Envelope, handle: (trx: Transaction<DB>, work: UnitOfWork) => Promise<void>): Promise<boolean> {
  return appliedOnce(tx.db, consumer, envelope, () => tx.run(async (trx, work) => {
    await handle(trx, work);
    // Recorded with the step's outbox rows (one statement): a message applied before rolls all back.
    work.consumed(consumer, envelope.id);
  }));
}

/**
 * Runs `apply`, whose transaction records the message's id as consumed by `consumer` with its effect
 * (`UnitOfWork.consumed`): true when it applied the message now, false when it had been applied
 * before (the record's unique key failed the commit, or the handler refused what it had already
 * done — a repeated message meeting the state it made).
 */
export async function appliedOnce<DB>(db: Kysely<DB>, consumer: string, envelope: Envelope, apply: () => Promise<unknown>): Promise<boolean> {
  try {
    await apply();
    return true;
  } catch (err) {
    if (err instanceof AlreadyApplied) return false;
    if (await appliedBefore(db, consumer, envelope.id)) return false;
    throw err;
  }
}

async function appliedBefore<DB>(db: Kysely<DB>, consumer: string, messageId: string): Promise<boolean> {
  const row = await (db as unknown as Kysely<PlatformTables>).selectFrom('processedMessages').select('messageId').where('consumer', '=', consumer).where('messageId', '=', messageId).executeTakeFirst().catch(() => undefined);
  return row !== undefined;
}

export interface MessageConsumerOptions<M extends MessageDef> {
  bus: Bus;
  logger: Logger;
  /** Durable name, unique per (service, purpose). */
  durable: string;
  def: M;
  concurrency?: number;
  /** Applies a message checked against its contract: true when applied now, false for one applied before. */
  apply: (envelope: Envelope, data: Static<M['data']>) => Promise<boolean>;
}

/**
 * A durable consumer of one message type (docs/messaging.md): each message is checked against
 * its contract (one that breaks it is terminated, never retried), applied, and acknowledged; a failure
 * is retried with backoff, an AppError terminates it. `apply` makes it exactly once (`appliedOnce`).
 */
export async function consumeMessages<M extends MessageDef>(opts: MessageConsumerOptions<M>): Promise<Stoppable> {
  const sagaStep = exchangeMetrics.sagaStep().bind({ consumer: opts.durable });
  const processed = exchangeMetrics.messagesProcessed();
  const outcomes = { applied: processed.bind({ consumer: opts.durable, outcome: 'applied' }), repeat: processed.bind({ consumer: opts.durable, outcome: 'repeat' }) };
  const dataCheck = validator(opts.def.data);
  const subject = opts.def.kind === 'event' ? subjects.event(opts.bus.namespace, opts.def.type) : subjects.command(opts.bus.namespace, opts.def.type);
  return opts.bus.consume({
    stream: opts.def.kind === 'event' ? 'events' : 'commands',
    durable: opts.durable,
    filter: subject,
    concurrency: opts.concurrency ?? 4,
    handler: async (msg) => {
      const read = readMessage(msg, dataCheck, opts.logger);
      if (!read.ok) return read.outcome;
      try {
        const applied = await opts.apply(read.envelope, read.data as Static<M['data']>);
        // The saga step's latency: from the message's commit to its outbox to this step's commit.
        if (applied) sagaStep.observe(Math.max(0, Date.now() - Date.parse(read.envelope.occurredAt)) / 1000);
        (applied ? outcomes.applied : outcomes.repeat).inc();
        return ack();
      } catch (err) {
        if (err instanceof NotYet) {
          processed.inc({ consumer: opts.durable, outcome: 'deferred' });
          opts.logger.debug({ subject: msg.subject, reason: err.message, attempt: msg.deliveryCount }, 'message comes early; delivered again later');
          return nak(Math.min(5_000, 50 * 2 ** Math.min(msg.deliveryCount, 7)));
        }
        if (isAppError(err)) {
          processed.inc({ consumer: opts.durable, outcome: 'rejected' });
          opts.logger.error({ err, subject: msg.subject, messageId: read.envelope.id }, 'message rejected by its handler; terminated');
          return term(err.message);
        }
        processed.inc({ consumer: opts.durable, outcome: 'retry' });
        opts.logger.warn({ err, subject: msg.subject, attempt: msg.deliveryCount }, 'message handling failed; will retry');
        return retryLater(msg);
      }
    },
  });
}

/**
 * A durable consumer whose effect is applied exactly once (docs/messaging.md): the processed
 * message id is inserted in the same database transaction as the effect, so a redelivery finds it
 * and only acks. Invalid payloads are terminated (never retried); failures are retried with backoff.
 */
export function consumeIdempotently<M extends MessageDef, DB, R = void>(opts: IdempotentConsumerOptions<M, DB, R>): Promise<Stoppable> {
  return consumeMessages({
    bus: opts.bus, logger: opts.logger, durable: opts.durable, def: opts.def, ...(opts.concurrency !== undefined && { concurrency: opts.concurrency }),
    apply: async (envelope, data) => {
      let result: R | undefined;
      const applied = await applyOnce(opts.tx, opts.durable, envelope, async (trx, work) => {
        result = await opts.handle(trx, data, work, envelope);
      });
      if (applied) await opts.afterCommit?.(data, result as R);
      return applied;
    },
  });
}
