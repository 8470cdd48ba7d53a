import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { names, subjects } from '@aex/contracts';
import { NatsBus } from '../src/bus/nats-bus.js';
import { ack, ConfigError, connectBus, loadConfig, type Logger } from '../src/index.js';
import { eventually, NatsCluster, testNamespace, TEST_NATS_URL } from '../src/testing/index.js';

// NATS_REPLICAS (docs/messaging.md "Replication"): every stream and KV bucket of the exchange is kept
// on that many servers, created so and scaled to it at start; a count the NATS cannot hold stops the
// start naming the variable. Real servers: a three-node cluster of the test kit, and the machine's
// single NATS.

/** A logger whose JSON lines the test reads. */
function capturingLogger(): { logger: Logger; lines: Array<{ msg: string; stream?: string; from?: number; to?: number }> } {
  const lines: Array<{ msg: string }> = [];
  return { logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string }) }), lines };
}

/** The servers a stream (or a consumer) is kept on, once it has a leader. */
async function peersOf(jsm: JetStreamManager, stream: string, consumer?: string): Promise<string[]> {
  const info = consumer ? await jsm.consumers.info(stream, consumer) : await jsm.streams.info(stream);
  const cluster = info.cluster;
  if (!cluster?.leader) return [];
  return [cluster.leader, ...(cluster.replicas ?? []).map((r) => r.name)].sort();
}

describe('replicated JetStream on a three-node cluster', () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
    nc = await connect({ servers: cluster.url.split(',') });
    jsm = await jetstreamManager(nc);
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  const replicasOf = async (stream: string) => (await jsm.streams.info(stream)).config.num_replicas;

  it('keeps the events and commands streams and a KV bucket on three servers with NATS_REPLICAS 3', async () => {
    const ns = testNamespace();
    const bus = await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 3 });
    try {
      await bus.kv(names.bucket(ns, 'cache'));
      for (const stream of [names.eventsStream(ns), names.commandsStream(ns), `KV_${names.bucket(ns, 'cache')}`]) {
        expect(await replicasOf(stream)).toBe(3);
        expect(await eventually(async () => (await peersOf(jsm, stream)).length === 3 && peersOf(jsm, stream), 10_000, 100)).toEqual(['n1', 'n2', 'n3']);
      }
    } finally {
      await bus.destroyNamespace();
      await bus.close();
    }
  });

  it('raises existing streams, a bucket and a durable consumer from 1 to 3 replicas, and lowers them back, logging each change once', async () => {
    const ns = testNamespace();
    const [events, bucket] = [names.eventsStream(ns), names.bucket(ns, 'cache')];
    const first = await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 1 });
    await (await first.kv(bucket)).put('kept', 'yes');
    await (await first.consume({ stream: 'events', durable: 'follower', filter: subjects.events(ns), handler: async () => ack() })).stop();
    await first.close();
    expect(await peersOf(jsm, events, 'follower')).toHaveLength(1);

    const { logger, lines } = capturingLogger();
    const raised = await NatsBus.connect(cluster.url, ns, 'test', logger, { replicas: 3 });
    try {
      expect((await (await raised.kv(bucket)).get('kept'))?.value).toBe('yes');
      expect(await replicasOf(events)).toBe(3);
      expect(await replicasOf(names.commandsStream(ns))).toBe(3);
      expect(await replicasOf(`KV_${bucket}`)).toBe(3);
      // The server moves a durable consumer created without a count of its own along with its stream.
      expect(await eventually(async () => (await peersOf(jsm, events, 'follower')).length === 3, 10_000, 100)).toBe(true);
      const changes = lines.filter((l) => l.to === 3);
      expect(changes.map((l) => l.stream).sort()).toEqual([events, names.commandsStream(ns), `KV_${bucket}`].sort());
      expect(changes.every((l) => l.from === 1 && /now keeps 3 replicas/.test(l.msg))).toBe(true);
    } finally {
      await raised.close();
    }

    const lowered = await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 1 });
    try {
      await lowered.kv(bucket);
      expect([await replicasOf(events), await replicasOf(names.commandsStream(ns)), await replicasOf(`KV_${bucket}`)]).toEqual([1, 1, 1]);
      expect(await eventually(async () => (await peersOf(jsm, events, 'follower')).length === 1, 10_000, 100)).toBe(true);
      expect((await (await lowered.kv(bucket)).get('kept'))?.value).toBe('yes');
    } finally {
      await lowered.destroyNamespace();
      await lowered.close();
    }
  });

  it('lets several processes that start at once with a new count all start, and scales each stream once', async () => {
    const ns = testNamespace();
    await (await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 1 })).close();
    const { logger, lines } = capturingLogger();
    const buses = await Promise.all(Array.from({ length: 4 }, () => NatsBus.connect(cluster.url, ns, 'test', logger, { replicas: 3 })));
    try {
      expect(await replicasOf(names.eventsStream(ns))).toBe(3);
      expect(await replicasOf(names.commandsStream(ns))).toBe(3);
      // Only the process whose update made the change logs it: the others' updates change nothing.
      await eventually(async () => lines.some((l) => l.stream === names.eventsStream(ns)), 5_000, 50);
      expect(lines.filter((l) => l.stream === names.eventsStream(ns))).toHaveLength(1);
    } finally {
      await buses[0]!.destroyNamespace();
      await Promise.all(buses.map((b) => b.close()));
    }
  });

  it('refuses NATS_REPLICAS 5 on three nodes, naming the variable, for new streams and for existing ones', async () => {
    const ns = testNamespace();
    const refused = NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 5 });
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toThrow(/^Invalid configuration: NATS_REPLICAS 5 needs a JetStream cluster of at least 5 servers; the NATS at 127\.0\.0\.1:\d+ has 3 running/);

    const existing = await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 3 });
    try {
      await expect(NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 5 })).rejects.toThrow(/NATS_REPLICAS 5 needs a JetStream cluster of at least 5 servers/);
      expect(await replicasOf(names.eventsStream(ns))).toBe(3);
    } finally {
      await existing.destroyNamespace();
      await existing.close();
    }
  });

  it('keeps serving a KV bucket and the events stream after the node leading the bucket is killed', async () => {
    const ns = testNamespace();
    const bucket = names.bucket(ns, 'cache');
    const bus = await NatsBus.connect(cluster.url, ns, 'test', undefined, { replicas: 3 });
    const kv = await bus.kv(bucket);
    await kv.put('before', '1');
    // Three copies on three nodes: the killed node held one of the events stream's too.
    const leader = (await jsm.streams.info(`KV_${bucket}`)).cluster!.leader!;
    try {
      await cluster.kill(leader);
      // The remaining two elect a new leader within seconds (how fast work resumes: docs/messaging.md).
      await eventually(async () => (await kv.put('after', '2'), true), 30_000, 200);
      expect((await kv.get('before'))?.value).toBe('1');
      expect((await kv.get('after'))?.value).toBe('2');
      const subject = subjects.event(ns, 'test.smoke');
      const msgId = randomUUID();
      await eventually(async () => (await bus.publish(subject, { n: 1 }, { msgId }), true), 30_000, 200);
      const stored = await jsm.streams.getMessage(names.eventsStream(ns), { last_by_subj: subject });
      expect(stored?.json()).toEqual({ n: 1 });
    } finally {
      await cluster.restart(leader);
      await bus.destroyNamespace();
      await bus.close();
    }
  }, 90_000);
});

describe('replicated JetStream on a single NATS server', () => {
  it('refuses NATS_REPLICAS 3 at start, naming the variable and the server, and creates nothing', async () => {
    const ns = testNamespace();
    const cfg = loadConfig({ NATS_URL: TEST_NATS_URL, NATS_REPLICAS: '3', BUS_NAMESPACE: ns });
    await expect(connectBus(cfg, 'test', { allowMemory: false })).rejects.toThrow(
      /^Invalid configuration: NATS_REPLICAS 3 needs a JetStream cluster of at least 3 servers; the NATS at 127\.0\.0\.1:4222 has 1 \(a single server, not clustered\)\.$/,
    );
    const nc = await connect({ servers: TEST_NATS_URL });
    try {
      const jsm = await jetstreamManager(nc);
      await expect(jsm.streams.info(names.eventsStream(ns))).rejects.toThrow(/stream not found/);
    } finally {
      await nc.close();
    }
  });

  it('runs with NATS_REPLICAS 1, one copy of each stream', async () => {
    const ns = testNamespace();
    const bus = await connectBus(loadConfig({ NATS_URL: TEST_NATS_URL, NATS_REPLICAS: '1', BUS_NAMESPACE: ns }), 'test', { allowMemory: false });
    const nc = await connect({ servers: TEST_NATS_URL });
    try {
      const jsm = await jetstreamManager(nc);
      expect((await jsm.streams.info(names.eventsStream(ns))).config.num_replicas).toBe(1);
    } finally {
      await nc.close();
      await (bus as NatsBus).destroyNamespace();
      await bus.close();
    }
  });
});
