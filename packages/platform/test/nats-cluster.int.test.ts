import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsBus } from '../src/bus/nats-bus.js';
import { eventually, NatsCluster } from '../src/testing/index.js';

// The test kit's three-node JetStream cluster: what the deployed shape's tests run on.
describe('the test kit NATS cluster', () => {
  let cluster: NatsCluster;
  beforeAll(async () => {
    cluster = await NatsCluster.start(3);
  }, 30_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('serves JetStream through any node, and again after one is killed and restarted', async () => {
    expect(cluster.url.split(',')).toHaveLength(3);
    const bus = await NatsBus.connect(cluster.url, 'tcluster', 'test');
    try {
      expect(await bus.healthy()).toBe(true);
      await cluster.kill('n2');
      expect(cluster.nodes[1]!.running()).toBe(false);
      await cluster.restart('n2');
      expect(cluster.nodes[1]!.running()).toBe(true);
      // A client whose server was n2 is back once it has reconnected (to n2 or another node).
      expect(await eventually(() => bus.healthy(), 15_000, 200)).toBe(true);
    } finally {
      await bus.destroyNamespace();
      await bus.close();
    }
  }, 60_000);
});
