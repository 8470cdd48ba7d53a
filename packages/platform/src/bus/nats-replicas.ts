import type { NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { ConfigError } from '../config.js';
import type { Logger } from '../logger.js';

/** JetStream's API errors that say the cluster has too few servers for a stream's replicas. */
const TOO_FEW_SERVERS = new Set([
  10005, // no suitable peers for placement
  10023, // insufficient resources
  10074, // replicas > 1 not supported in non-clustered mode
]);

/**
 * How often a change of replicas made by another process starting at the same time is looked for,
 * and how long one look waits: while a stream changes its peers, an info request can go unanswered.
 */
const LOOK_AGAIN_MS = 100;
const LOOK_TIMEOUT_MS = 500;
/** Asks for a stream just created this many times while the cluster answers it is not found (about 2 s). */
const NOT_FOUND_ATTEMPTS = 6;
/** How long a start asks again for a stream's info that goes unanswered (`info`). */
const INFO_PATIENCE_MS = 20_000;
/** Longest a start waits for a stream whose count it changed to have a leader again (an election takes NATS 2.9 4–9 s). */
const LEADER_WAIT_MS = 15_000;

/**
 * The copies JetStream keeps of each stream and KV bucket of the exchange (`NATS_REPLICAS`). A stream
 * is created with them, and one found with another count at start is scaled up or down to them; its
 * durable consumers follow, as they are created without a count of their own (`num_replicas` 0: the
 * stream's). A count the NATS cannot hold stops the start with a `ConfigError` naming the variable.
 */
export class StreamReplicas {
  private looking: Promise<JetStreamManager> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly count: number,
    private readonly logger: Logger | undefined,
  ) {}

  /**
   * Refuses more than one copy against a server that is not clustered before asking it anything: such
   * a server refuses to create a stream with 3 replicas, but takes an update to 3 and then reports 3
   * while it keeps one.
   */
  checkClustered(): void {
    if (this.count > 1 && !this.nc.info?.cluster) throw this.tooFew('1 (a single server, not clustered)');
  }

  /** `err` from creating or scaling a stream: the `ConfigError` naming NATS_REPLICAS when the cluster has too few servers. */
  refusal(err: unknown): unknown {
    if (this.count <= 1 || !(err instanceof JetStreamApiError) || !TOO_FEW_SERVERS.has(err.code)) return err;
    // The servers the connected one knows of: every running node, unless the cluster does not advertise them.
    const running = this.nc.info?.connect_urls?.length;
    return this.tooFew(`${running ? `${running} running` : 'fewer'} (it answered: ${err.message})`);
  }

  private tooFew(has: string): ConfigError {
    return new ConfigError('NATS_REPLICAS', `${this.count} needs a JetStream cluster of at least ${this.count} servers; the NATS at ${this.nc.getServer()} has ${has}.`);
  }

  /**
   * Gives an existing stream `count` replicas when it has another number. Idempotent, and safe when
   * several processes start at once: a NATS 2.9 server does not answer an update that changes nothing,
   * so an update another process made first is looked for while ours waits for its answer.
   */
  async apply(stream: string, known?: StreamInfo): Promise<void> {
    const from = (known ?? await this.infoOfNew(stream)).config.num_replicas;
    if (from === this.count) return;
    let answered = false;
    const ours = this.jsm.streams.update(stream, { num_replicas: this.count }).then(
      () => this.logger?.info({ stream, from, to: this.count }, `JetStream stream ${stream} now keeps ${this.count} replicas (NATS_REPLICAS)`),
      (err: unknown) => this.refusal(err),
    ).finally(() => {
      answered = true;
    });
    const refused = await Promise.race([ours, this.madeElsewhere(stream, () => answered)]);
    if (refused instanceof ConfigError) throw refused;
    if (refused !== undefined && !(await this.holds(stream))) throw refused;
    await this.led(stream);
  }

  /**
   * Resolves once a stream whose count just changed has a leader again (its copies form a new group,
   * which elects one): reads of a bucket go to its leader, and the service's first read would otherwise
   * wait out the election. Gives up quietly after `LEADER_WAIT_MS`: the bus's callers bound their own waits.
   */
  private async led(stream: string): Promise<void> {
    const deadline = Date.now() + LEADER_WAIT_MS;
    while (Date.now() < deadline) {
      const info = await this.jsm.streams.info(stream).catch(() => undefined);
      if (info?.cluster?.leader) return;
      await new Promise((r) => setTimeout(r, LOOK_AGAIN_MS));
    }
  }

  /**
   * The info of a stream just created, here or by another process starting at the same time: on a
   * cluster, a stream another client's create made can be answered "not found" for a moment.
   */
  private async infoOfNew(stream: string): Promise<StreamInfo> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.jsm.streams.info(stream);
      } catch (err) {
        if (attempt >= NOT_FOUND_ATTEMPTS || !(err instanceof JetStreamApiError) || err.code !== JetStreamApiCodes.StreamNotFound) throw err;
        await new Promise((r) => setTimeout(r, LOOK_AGAIN_MS * attempt));
      }
    }
  }

  /** Resolves once the stream has `count` replicas, or (undefined) once `done`. */
  private async madeElsewhere(stream: string, done: () => boolean): Promise<undefined> {
    while (!done()) {
      await new Promise((r) => setTimeout(r, LOOK_AGAIN_MS));
      if (!done() && (await this.holds(stream))) return undefined;
    }
    return new Promise<undefined>(() => undefined);
  }

  /**
   * A stream's info, asked again while it goes unanswered: a stream whose peers another process is
   * changing (several replicas starting with a new count) can leave an info request unanswered for
   * seconds. "Not found" and other refusals are thrown at once.
   */
  async info(stream: string): Promise<StreamInfo> {
    const deadline = Date.now() + INFO_PATIENCE_MS;
    for (;;) {
      try {
        return await this.jsm.streams.info(stream);
      } catch (err) {
        if (err instanceof JetStreamApiError || Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, LOOK_AGAIN_MS));
      }
    }
  }

  private async holds(stream: string): Promise<boolean> {
    this.looking ??= jetstreamManager(this.nc, { timeout: LOOK_TIMEOUT_MS, checkAPI: false });
    const info = await (await this.looking).streams.info(stream).catch(() => null);
    return info?.config.num_replicas === this.count;
  }
}
