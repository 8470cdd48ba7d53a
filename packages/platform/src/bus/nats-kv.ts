import { JetStreamApiCodes, type JetStreamManager } from '@nats-io/jetstream';
import type { KV, Kvm } from '@nats-io/kv';
import { KvConflictError, type KvStore } from './types.js';
import { isApiError } from './nats-messages.js';
import type { StreamReplicas } from './nats-replicas.js';

/**
 * A JetStream KV bucket as the bus's `KvStore`: a changed key is a `KvConflictError`. The bucket is the
 * stream `KV_<bucket>`, kept with the bus's replicas like its other streams.
 */
export async function natsKvStore(kvm: Kvm, jsm: JetStreamManager, bucket: string, opts: { ttlMs?: number; replication: StreamReplicas }): Promise<KvStore> {
  const { replication } = opts;
  const kv: KV = await kvm.create(bucket, { history: 1, replicas: replication.count, ...(opts.ttlMs ? { ttl: opts.ttlMs } : {}) })
    .catch((err: unknown) => {
      throw replication.refusal(err);
    });
  await replication.apply(`KV_${bucket}`);
  const conflict = (key: string) => (err: unknown): never => {
    if (isApiError(err, JetStreamApiCodes.StreamWrongLastSequence) || /wrong last sequence/i.test(String((err as Error)?.message))) {
      throw new KvConflictError(key);
    }
    throw err;
  };
  return {
    async get(key) {
      const e = await kv.get(key);
      if (!e || e.operation !== 'PUT') return null;
      return { value: e.string(), revision: e.revision };
    },
    create: (key, value) => kv.create(key, value).catch(conflict(key)),
    update: (key, value, revision) => kv.update(key, value, revision).catch(conflict(key)),
    put: (key, value) => kv.put(key, value),
    async delete(key) {
      await kv.delete(key);
    },
    // Not nats.js's `kv.keys()`: its push consumer ends a listing on the last message it counted,
    // or else on an idle heartbeat, and an entry that expires between the count and the delivery
    // leaves it waiting for that. The gateway registry's entries expire by design, and identity
    // lists it for every forget; identity's stall after a gateway died went away with this change
    // (docs/performance.md). The stream's subjects instead, then each key's last
    // entry (deleted and expired ones left out): requests with a bound, no consumer.
    async keys() {
      const prefix = `$KV.${bucket}.`;
      const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}>` });
      const listed = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
      const live = await Promise.all(listed.map(async (key) => ((await kv.get(key))?.operation === 'PUT' ? key : null)));
      return live.filter((key): key is string => key !== null);
    },
  };
}
