import { randomUUID } from 'node:crypto';
import { connect as connectNats, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { names, subjects, Type, type MessageDef, type MessageEnvelope } from '@aex/contracts';
import { consumeIdempotently, consumeMessages, NatsBus, OutboxRelay, Transactor, type Stoppable } from '../src/index.js';
import { eventually, NatsCluster, testLogger, testNamespace } from '../src/testing/index.js';
import { messagingTest, pinged } from './messaging-kit.js';

// A purchase's path through a three-node JetStream cluster, streams replicated on all three, while
// one node is lost (docs/messaging.md, "When a NATS node is lost"): a command published (sent again
// under its message id until stored), applied once by an idempotent consumer whose transaction
// enqueues a reply event (handed to the outbox relay at its commit), the reply consumed back. Real
// parts: the NATS cluster, Postgres, the platform's bus, consumers and relay. The bounds are seconds
// of correctness on a shared, loaded machine, far under the 30–45 s a lost leader used to stall a
// consumer (nats.js's pull heartbeats of 15 s) and the 18–22 s work waited after the node returned.

/**
 * The longest a command may wait for its reply while a node is killed: leaders of the streams and
 * consumers elected again (NATS 2.9: 4–9 s, longer on a loaded machine) and found.
 */
const KILLED_WITHIN_MS = 14_000;
/**
 * The same for a frozen node, which is left only once it stops answering pings, and whose thawing
 * has the cluster elect leaders again. The freeze lasts longer than this, so a client that stays
 * with the frozen node fails it.
 */
const FROZEN_WITHIN_MS = 20_000;
const FROZEN_FOR_MS = 25_000;
/**
 * The longest a command may wait with a node killed, its copy on the lane beside JetStream
 * (nats-lane.ts): at once when the stream had no leader, 2–3 s when the consumer's pull stalled.
 */
const LANE_WITHIN_MS = 5_000;
/** A command sent once the killed node is back: answered at once, not after the 20 s the consumers used to wait. */
const AFTER_RETURN_WITHIN_MS = 4_000;

const Ping = Type.Object({ n: Type.Integer() }, { additionalProperties: false });
const ping: MessageDef<typeof Ping> = { kind: 'command', owner: 'identity', type: 'test.ping', data: Ping };

const t = messagingTest({ bus: false });
const logger = testLogger();
let cluster: NatsCluster;
const cleanup: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await NatsCluster.start(3);
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});
afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo().catch(() => undefined);
});

/** A bus on the cluster with R3 streams. A freshly formed cluster may not place three replicas yet: asked again. */
async function connect(url: string, namespace: string, name: string): Promise<NatsBus> {
  const bus = await eventually(() => NatsBus.connect(url, namespace, name, logger, { replicas: 3 }), 20_000, 250);
  cleanup.push(() => bus.close());
  return bus;
}

/**
 * Commands sent every 100 ms, each answered through the consumer and the relay; when each was sent
 * and when its reply came. A publish that fails is sent again, as the relay sends a row again.
 */
class PurchaseFlow {
  readonly sent = new Map<number, number>();
  readonly replied = new Map<number, number>();
  failedPublishes = 0;
  private next = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly producer: NatsBus) {}

  start(): void {
    this.timer = setInterval(() => void this.send(), 100);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async send(): Promise<number> {
    const n = this.next++;
    this.sent.set(n, Date.now());
    const env: MessageEnvelope = { id: randomUUID(), type: ping.type, occurredAt: new Date().toISOString(), data: { n } };
    for (;;) {
      try {
        await this.producer.publish(subjects.command(this.producer.namespace, ping.type), env, { msgId: env.id });
        return n;
      } catch {
        this.failedPublishes++;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** How long after `from` the first command sent at or after it was answered. */
  async resumedAfter(from: number, withinMs: number): Promise<number> {
    return eventually(async () => {
      const answered = [...this.sent].filter(([n, at]) => at >= from && this.replied.has(n)).map(([n]) => this.replied.get(n)!);
      return answered.length > 0 && Math.min(...answered) - from;
    }, withinMs, 50);
  }

  /** The reply time of command `n`, measured from its sending. */
  async latencyOf(n: number, withinMs: number): Promise<number> {
    return eventually(async () => this.replied.has(n) && this.replied.get(n)! - this.sent.get(n)!, withinMs, 20);
  }

  /** The longest reply time of the commands sent at or after `from` (all answered). */
  longestSince(from: number): number {
    return Math.max(...[...this.sent].filter(([, at]) => at >= from).map(([n, at]) => this.replied.get(n)! - at));
  }
}

/** The consumer side: the command applied once (an `effects` row), its reply enqueued in the same transaction. */
async function purchaseSide(bus: NatsBus, flow: PurchaseFlow): Promise<void> {
  const relay = new OutboxRelay(t.db, bus, logger);
  relay.start();
  cleanup.push(async () => relay.stop());
  const consumers: Stoppable[] = [
    await consumeIdempotently({
      bus, tx: new Transactor(t.db, relay), logger, durable: 'apply', def: ping,
      handle: async (trx, data, work, env) => {
        await trx.insertInto('effects').values({ messageId: env.id, value: data.n }).execute();
        work.enqueue(pinged, { value: data.n });
      },
    }),
    await consumeMessages({
      bus, logger, durable: 'replies', def: pinged,
      apply: async (_env, data) => {
        if (!flow.replied.has(data.value)) flow.replied.set(data.value, Date.now());
        return true;
      },
    }),
  ];
  cleanup.push(async () => Promise.all(consumers.map((c) => c.stop())));
}

/** A JetStream manager of its own on the running nodes. */
async function withJsm<T>(fn: (jsm: JetStreamManager) => Promise<T>): Promise<T> {
  const nc: NatsConnection = await connectNats({ servers: cluster.nodes.filter((n) => n.running()).map((n) => n.url) });
  try {
    return await fn(await jetstreamManager(nc));
  } finally {
    await nc.close();
  }
}

/** Asks a stream's leader to hand its place to another node. */
async function stepDown(stream: string): Promise<void> {
  const nc = await connectNats({ servers: cluster.nodes.filter((n) => n.running()).map((n) => n.url) });
  try {
    await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, '', { timeout: 5_000 });
  } finally {
    await nc.close();
  }
}

/** The node leading a stream (a KV bucket is the stream `KV_<bucket>`). */
const leaderOf = (stream: string) => withJsm(async (jsm) => (await jsm.streams.info(stream)).cluster!.leader!);

const urlOf = (node: string) => cluster.nodes.find((n) => n.name === node)!.url;

/** Every command answered, and applied exactly once. */
async function expectAppliedOnce(flow: PurchaseFlow): Promise<void> {
  await eventually(async () => flow.replied.size === flow.sent.size, 20_000, 100);
  // Each command (one message id) carries its own n: one row per n, and no more rows than commands.
  const rows = await t.db.selectFrom('effects').select(['messageId', 'value']).execute();
  expect(new Set(rows.map((r) => r.value)).size).toBe(flow.sent.size);
  expect(rows).toHaveLength(flow.sent.size);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Consumer and relay on `consumerUrl`, commands sent from `producerUrl` every 100 ms, flowing. */
async function flowing(ns: string, producerUrl: string, consumerUrl: string): Promise<PurchaseFlow> {
  const flow = new PurchaseFlow(await connect(producerUrl, ns, 'producer'));
  await purchaseSide(await connect(consumerUrl, ns, 'consumer'), flow);
  await flow.latencyOf(await flow.send(), 10_000);
  flow.start();
  return flow;
}

describe('the bus with one NATS node of three lost (streams R3)', () => {
  it('keeps purchases going within seconds when the stream leader\'s node is killed, and at once when it returns', async () => {
    const ns = testNamespace();
    const admin = await connect(cluster.url, ns, 'admin');
    cleanup.push(() => admin.destroyNamespace());
    const victim = await leaderOf(names.commandsStream(ns));
    // The producer's only known server is the victim: it finds the others through the cluster.
    const flow = await flowing(ns, urlOf(victim), cluster.url);
    await sleep(1_000);

    const faultAt = Date.now();
    await cluster.kill(victim);
    cleanup.push(() => cluster.restart(victim));
    const resumed = await flow.resumedAfter(faultAt, KILLED_WITHIN_MS + 5_000);
    // Commands go on through the lane before the stream has a leader again; it gets one all the same.
    await eventually(async () => (await leaderOf(names.commandsStream(ns))) !== victim, 20_000, 250);
    await sleep(faultAt + 8_000 - Date.now());
    await cluster.restart(victim);
    const backAt = Date.now();
    await sleep(5_000);
    flow.stop();
    await expectAppliedOnce(flow);
    logger.info({ resumed, longest: flow.longestSince(0), afterReturn: flow.longestSince(backAt), failedPublishes: flow.failedPublishes }, 'stream leader killed');
    // Unstored copies on the lane: nothing waits for the election.
    expect(resumed).toBeLessThanOrEqual(LANE_WITHIN_MS);
    expect(flow.longestSince(0)).toBeLessThanOrEqual(LANE_WITHIN_MS);
    expect(flow.longestSince(backAt)).toBeLessThanOrEqual(AFTER_RETURN_WITHIN_MS);
  }, 120_000);

  it('keeps purchases going within seconds when the node leading the consumer, not the stream, is killed', async () => {
    const ns = testNamespace();
    const admin = await connect(cluster.url, ns, 'admin');
    cleanup.push(() => admin.destroyNamespace());
    const flow = await flowing(ns, cluster.url, cluster.url);
    const stream = names.commandsStream(ns);
    const victim = await withJsm(async (jsm) => (await jsm.consumers.info(stream, 'apply')).cluster!.leader!);
    // The stream's leader elsewhere: its publishes are acknowledged, only the consumer's pull stalls.
    while ((await leaderOf(stream)) === victim) {
      await stepDown(stream);
      await eventually(async () => (await leaderOf(stream)) !== victim || undefined, 10_000, 250).catch(() => undefined);
    }
    await sleep(1_000);

    const faultAt = Date.now();
    await cluster.kill(victim);
    cleanup.push(() => cluster.restart(victim));
    await sleep(8_000);
    flow.stop();
    await expectAppliedOnce(flow);
    const longest = flow.longestSince(faultAt);
    logger.info({ longest, failedPublishes: flow.failedPublishes }, 'consumer leader killed');
    // Stored copies held on the lane are applied once the pull missed its leader's heartbeats: 2–3 s
    // in most runs. In about one run of three the copies are not applied and the command waits for
    // the consumer's next leader (7.6–8.3 s measured, on an idle machine too), so the bound here is
    // the election's, as when the stream's leader is killed; docs/messaging.md says so.
    expect(longest).toBeLessThanOrEqual(KILLED_WITHIN_MS);
  }, 60_000);

  it('keeps purchases going when the node holding the clients and the stream leader freezes, and after it thaws', async () => {
    const ns = testNamespace();
    const admin = await connect(cluster.url, ns, 'admin');
    cleanup.push(() => admin.destroyNamespace());
    const victim = await leaderOf(names.commandsStream(ns));
    // Both clients on the node that freezes: its sockets stay open while nothing answers.
    const flow = await flowing(ns, urlOf(victim), urlOf(victim));
    await sleep(1_000);

    const faultAt = Date.now();
    cluster.freeze(victim);
    cleanup.push(async () => cluster.thaw(victim));
    const resumed = await flow.resumedAfter(faultAt, FROZEN_WITHIN_MS + 5_000);
    await sleep(faultAt + FROZEN_FOR_MS - Date.now());
    cluster.thaw(victim);
    const backAt = Date.now();
    const resumedAfterThaw = await flow.resumedAfter(backAt, FROZEN_WITHIN_MS + 5_000);
    await sleep(5_000);
    flow.stop();
    await expectAppliedOnce(flow);
    logger.info({ resumed, resumedAfterThaw, longest: flow.longestSince(0), failedPublishes: flow.failedPublishes }, 'stream leader and clients frozen');
    expect(resumed).toBeLessThanOrEqual(FROZEN_WITHIN_MS);
    expect(resumedAfterThaw).toBeLessThanOrEqual(FROZEN_WITHIN_MS);
    expect(flow.longestSince(0)).toBeLessThanOrEqual(FROZEN_WITHIN_MS);
  }, 120_000);

  it('keeps a replicated KV bucket answering reads and compare-and-set writes within seconds of its leader\'s loss', async () => {
    const ns = testNamespace();
    const bus = await connect(cluster.url, ns, 'kv');
    cleanup.push(() => bus.destroyNamespace());
    const bucket = names.bucket(ns, 'limits');
    const kv = await bus.kv(bucket);
    await kv.create('k', '0');
    const victim = await leaderOf(`KV_${bucket}`);
    const faultAt = Date.now();
    await cluster.kill(victim);
    cleanup.push(() => cluster.restart(victim));
    const written = await eventually(async () => {
      const e = (await kv.get('k'))!;
      await kv.update('k', String(Number(e.value) + 1), e.revision);
      return Date.now() - faultAt;
    }, KILLED_WITHIN_MS + 5_000, 100);
    expect(written).toBeLessThanOrEqual(KILLED_WITHIN_MS);
    // At least the write seen to succeed (one whose answer was lost may have been stored too).
    expect(Number((await kv.get('k'))!.value)).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('makes a durable consumer deleted under a running consumer again, which goes on taking messages', async () => {
    const ns = testNamespace();
    const flow = await flowing(ns, cluster.url, cluster.url);
    cleanup.push(() => NatsBus.connect(cluster.url, ns, 'cleanup').then(async (b) => (await b.destroyNamespace(), b.close())));
    await sleep(500);
    await withJsm((jsm) => jsm.consumers.delete(names.commandsStream(ns), 'apply'));
    const deletedAt = Date.now();
    const resumed = await flow.resumedAfter(deletedAt, 15_000);
    flow.stop();
    // Made again, it is delivered the stream from its start: what was applied is not applied again.
    await expectAppliedOnce(flow);
    expect(resumed).toBeLessThanOrEqual(KILLED_WITHIN_MS);
    // The lane carried the commands meanwhile (the pull stalled); the consumer is there again all the same.
    const remade = await eventually(() => withJsm(async (jsm) => (await jsm.consumers.info(names.commandsStream(ns), 'apply')).config.durable_name), 15_000, 250);
    expect(remade).toBe('apply');
  }, 60_000);
});
