import { outsideTrace, type Stoppable } from '@aex/platform';
import type { WebhookDeps } from '../context.js';
import { secretsInForce } from '../endpoints/endpoints.js';
import { recordAttempts, signAndSend, type Attempted, type Outcome } from './attempts.js';
import { claimDue, claimOldestOf, giveBackDueTimes, putOff, unclaim, type Claimed } from './due-deliveries.js';
import { TimedBatches } from './timed-batches.js';

export interface DispatcherOptions {
  /** Attempts under way at once on this replica. */
  concurrency?: number;
  /** Attempts under way at once to one agent's endpoint: a slow one never takes more. */
  perEndpoint?: number;
  /** How often due deliveries are looked for when nothing wakes the dispatcher. */
  pollMs?: number;
}

/** A place of an endpoint taken for a fresh delivery before its row is written (the intake's hand-off). */
export interface Place {
  readonly agentId: string;
  readonly start: number;
}

/** What the intake hands the dispatcher: fresh deliveries go out without a claim round. */
export interface Handoff {
  /** How long a claim holds a delivery (ms). */
  readonly lease: number;
  /** How far a stuck endpoint's waiting deliveries are put off (ms). */
  readonly putOff: number;
  reserve(agentId: string): Place | null;
  isStuck(agentId: string): boolean;
  launch(place: Place, row: Claimed): void;
  giveUp(place: Place): void;
  waitingFor(agentIds: Iterable<string>): void;
}

/**
 * Delivers what is due (D14.3–D14.4), each endpoint at most `perEndpoint` attempts at once on this
 * replica, so a slow or dead endpoint takes only its own places and never holds up the others (no
 * head-of-line blocking); attempts run concurrently up to `concurrency`.
 *
 * A fresh delivery whose endpoint has a free place is written already claimed by the intake and
 * sent at once (`reserve`, then `launch`): the common case costs no claim. The rest — retries coming
 * due, deliveries whose endpoint was full, what another replica left — are claimed in rounds: due
 * deliveries claimed for a lease, at most the free places of each agent, none of an agent at its
 * limit. A round runs when something may be waiting for a place that has just come free, and on a
 * poll. Each attempt's outcome and the delivery's next state commit together; the schedule lives in
 * the rows, so it survives restarts, and a dispatcher that dies mid-attempt leaves a claim that
 * lapses: the attempt is made again (at least once, same webhook-id).
 */
export class Dispatcher implements Stoppable, Handoff {
  /** When each attempt under way started, by agent (agents with attempts under way only). */
  private readonly started = new Map<string, number[]>();
  /** Agents whose waiting deliveries were put off, and when. */
  private readonly deferred = new Map<string, number>();
  /** Agents that may have due deliveries unclaimed: a place of theirs coming free starts a round. */
  private readonly waiting = new Set<string>();
  /** The last round filled every free place: more may be due. */
  private moreDue = true;
  private total = 0;
  /** Attempts started so far: handed over by the intake as written, and claimed by rounds. */
  readonly counts = { handedOff: 0, claimed: 0 };
  private timer: NodeJS.Timeout | undefined;
  private draining: Promise<void> | null = null;
  /**
   * The stuck endpoints' bookkeeping (putting off, giving back), one statement at a time: two of them
   * never lock one endpoint's rows in different orders, and a give-back is never overtaken by a
   * put-off decided before it.
   */
  private bookkept: Promise<void> = Promise.resolve();
  private readonly refills = new Set<Promise<void>>();
  private deferPending = false;
  private again = false;
  private stopped = false;
  private readonly attempts = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  /** How long a claim holds a delivery: the attempt's deadline and room to record it (ms). */
  readonly lease: number;
  /** How far a stuck endpoint's waiting deliveries are put off (ms). */
  readonly putOff: number;
  private readonly recorder: TimedBatches<{ row: Attempted; r: Outcome }>;

  constructor(private readonly deps: WebhookDeps, opts: DispatcherOptions = {}) {
    this.recorder = new TimedBatches((batch) => recordAttempts(deps, batch).then(() => undefined), RECORD_BATCH);
    this.concurrency = opts.concurrency ?? 128;
    this.perEndpoint = opts.perEndpoint ?? 4;
    this.lease = deps.config.WEBHOOK_TIMEOUT_MS + 10_000;
    this.putOff = Math.max(deps.config.WEBHOOK_TIMEOUT_MS, PUT_OFF_MIN_MS);
    this.timer = outsideTrace(() => setInterval(() => this.kick(), opts.pollMs ?? 250));
  }

  /** Looks for due deliveries now (a new one was written, an attempt ended). */
  kick(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = outsideTrace(() => this.drain())
      .catch((err) => this.deps.logger.warn({ err }, 'webhook dispatch round failed; retrying'))
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.draining;
    await this.bookkept;
    await Promise.allSettled([...this.refills]);
    await Promise.allSettled([...this.attempts]);
    await this.recorder.flush();
  }

  /**
   * A place of `agentId`'s endpoint for a delivery about to be written, if one is free and none of
   * the agent's deliveries waits before it (those go first, in order, through a round).
   */
  reserve(agentId: string): Place | null {
    if (this.stopped || this.total >= this.concurrency || this.waiting.has(agentId)) return null;
    const starts = this.started.get(agentId) ?? [];
    if (starts.length >= this.perEndpoint) return null;
    return this.take(agentId);
  }

  /** The delivery was written claimed in `place`: its attempt starts now. */
  launch(place: Place, row: Claimed): void {
    this.counts.handedOff++;
    this.attempt(place, row);
  }

  /** No delivery was written for `place` (an event seen before, an agent without a URL). */
  giveUp(place: Place): void {
    this.free(place);
  }

  /** The agent's endpoint is stuck: its new deliveries are written put off, for its own places to take. */
  isStuck(agentId: string): boolean {
    return this.deferred.has(agentId);
  }

  /** Deliveries of these agents were written unclaimed, due now: a round takes them. */
  waitingFor(agentIds: Iterable<string>): void {
    let room = false;
    for (const agentId of agentIds) {
      this.waiting.add(agentId);
      room ||= (this.started.get(agentId)?.length ?? 0) < this.perEndpoint;
    }
    if (room && this.total < this.concurrency) this.kick();
  }

  private take(agentId: string): Place {
    const start = performance.now();
    this.started.set(agentId, [...(this.started.get(agentId) ?? []), start]);
    this.total++;
    return { agentId, start };
  }

  private free({ agentId, start }: Place): void {
    this.total--;
    const starts = (this.started.get(agentId) ?? []).filter((s) => s !== start);
    if (starts.length > 0) this.started.set(agentId, starts);
    else this.started.delete(agentId);
  }

  /** Sends one attempt in `place`; the place is the endpoint's while the request is on the wire. */
  private attempt(place: Place, row: Claimed): void {
    // The record then commits in the recorder's next batch (the row stays claimed until it has).
    const run: Promise<void> = signAndSend(this.deps, row, row.url, row.secret ? secretsInForce({ ...row, secret: row.secret }, this.deps.now()) : [])
      .then((r) => {
        this.release(place, r.ok);
        return this.recorder.add({ row, r });
      }, (err) => {
        this.release(place, false);
        this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt failed unexpectedly; it is made again when its claim lapses');
      })
      .catch((err) => this.deps.logger.error({ err, webhookId: row.webhookId }, 'webhook attempt could not be recorded; it is made again when its claim lapses'))
      .finally(() => this.attempts.delete(run));
    this.attempts.add(run);
  }

  private async drain(): Promise<void> {
    // Off the round's path: a stuck endpoint's bookkeeping never delays the others' claims.
    if (!this.deferPending) {
      this.deferPending = true;
      this.bookkeeping(() => {
        this.deferPending = false;
        return this.deferStuck();
      }, 'could not put off a stuck endpoint\'s deliveries; the next round tries again');
    }
    const room = this.concurrency - this.total;
    if (room <= 0) {
      this.moreDue = true;
      return;
    }
    const inFlight = new Map([...this.started].map(([agent, starts]) => [agent, starts.length]));
    // What this round may find for the agents thought to be waiting: those it does not fill up are
    // waiting no more (what the intake notes meanwhile is added back).
    const asked = [...this.waiting];
    this.waiting.clear();
    let rows: Claimed[];
    try {
      rows = await claimDue(this.deps.db, { limit: room, inFlight: [...inFlight], perEndpoint: this.perEndpoint, leaseMs: this.lease });
    } catch (err) {
      for (const agent of asked) this.waiting.add(agent);
      throw err;
    }
    this.moreDue = rows.length >= room;
    const claimed = new Map<string, number>();
    const giveBack: string[] = [];
    for (const row of rows) {
      const starts = this.started.get(row.agentId) ?? [];
      if (starts.length >= this.perEndpoint || this.total >= this.concurrency) {
        // Places taken by the intake while the claim ran.
        giveBack.push(row.webhookId);
        this.waiting.add(row.agentId);
        continue;
      }
      claimed.set(row.agentId, (claimed.get(row.agentId) ?? 0) + 1);
      this.counts.claimed++;
      this.attempt(this.take(row.agentId), row);
    }
    for (const agent of asked) {
      const free = this.perEndpoint - (inFlight.get(agent) ?? 0);
      if (free <= 0 || (claimed.get(agent) ?? 0) >= free) this.waiting.add(agent);
    }
    if (giveBack.length > 0) await unclaim(this.deps.db, giveBack);
  }

  /**
   * An endpoint is stuck when every one of its places has been taken for `STUCK_MS` (a dead or very
   * slow receiver). Its other due deliveries are then put off — their due time moves `putOff` ahead,
   * the time they had is kept — and so are its new ones as the intake writes them: no round reads a
   * stuck endpoint's backlog, which costs the others nothing. Its own places, as they come free, take
   * its oldest deliveries (`refill`); its first success gives the rest their due time back. Should
   * this replica die, what it put off comes due again after `putOff`.
   */
  private async deferStuck(): Promise<void> {
    const now = performance.now();
    const stuck = [...this.started]
      .filter(([agent, starts]) => starts.length >= this.perEndpoint && now - starts[0]! >= STUCK_MS && now - (this.deferred.get(agent) ?? -Infinity) >= STUCK_MS)
      .map(([agent]) => agent);
    if (stuck.length === 0) return;
    for (const agent of stuck) this.deferred.set(agent, now);
    await putOff(this.deps.db, stuck, this.putOff);
  }

  /** Once stopped, none is begun: what was put off comes due when its put-off ends. */
  private bookkeeping(step: () => Promise<void>, failure: string): void {
    if (this.stopped) return;
    this.bookkept = this.bookkept.then(step).catch((err) => this.deps.logger.warn({ err }, failure));
  }

  /** An attempt's request ended (`ok`: with a 2xx): its endpoint's place and the dispatcher's are free again. */
  private release(place: Place, ok: boolean): void {
    this.free(place);
    const { agentId } = place;
    if (this.deferred.has(agentId)) {
      if (ok) {
        // The endpoint answers again: what was put off is due again as it was.
        this.deferred.delete(agentId);
        this.bookkeeping(async () => {
          await giveBackDueTimes(this.deps.db, agentId);
          this.waitingFor([agentId]);
        }, 'could not give back the due times of a stuck endpoint\'s deliveries; they come due when put off ends');
      } else {
        const refill: Promise<void> = this.refill(agentId)
          .catch((err) => this.deps.logger.warn({ err, agentId }, 'could not claim a stuck endpoint\'s next deliveries; they come due when put off ends'))
          .finally(() => this.refills.delete(refill));
        this.refills.add(refill);
      }
      return;
    }
    // Under load a round waits until enough places are free: one claim per many attempts.
    if (this.waiting.has(agentId) || (this.moreDue && this.concurrency - this.total >= Math.min(CLAIM_MIN_ROOM, this.concurrency))) this.kick();
  }

  /**
   * A stuck endpoint's places that came free are given to its own oldest waiting deliveries (put off
   * or due), claimed by one query on its rows alone: its backlog is never made due all at once, so no
   * round reads it. The places are taken before the query, so places freed together never claim more.
   */
  private async refill(agentId: string): Promise<void> {
    const places: Place[] = [];
    while ((this.started.get(agentId)?.length ?? 0) < this.perEndpoint && this.total < this.concurrency && !this.stopped) places.push(this.take(agentId));
    if (places.length === 0) return;
    let rows: Claimed[] = [];
    try {
      rows = await claimOldestOf(this.deps.db, agentId, places.length, this.lease);
    } finally {
      for (const place of places.slice(rows.length)) this.free(place);
    }
    rows.forEach((row, i) => {
      this.counts.claimed++;
      this.attempt(places[i]!, row);
    });
    // Nothing of it waits any more: the endpoint is no longer treated as stuck.
    if (rows.length === 0 && !this.started.has(agentId)) this.deferred.delete(agentId);
  }
}

/** How long all of an endpoint's places must have been taken for it to count as stuck. */
const STUCK_MS = 1000;

/** A stuck endpoint's deliveries are put off at least this far (ms): rarely read again while it stays stuck. */
const PUT_OFF_MIN_MS = 60_000;

/** Free places that make an ended attempt start a claim at once (else the next kick or poll does). */
const CLAIM_MIN_ROOM = 16;

/** Attempts' records are written in batches of up to 64, an attempt waiting at most 3 ms. */
const RECORD_BATCH = { max: 64, waitMs: 3 };
