import { JetStreamApiCodes, type JetStreamManager } from '@nats-io/jetstream';
import type { KV, Kvm } from '@nats-io/kv';
import { KvConflictError, type KvOptions, type KvStore } from './types.js';
import { isApiError } from './nats-messages.js';
import type { StreamReplicas } from './nats-replicas.js';

/**
 * A JetStream KV bucket as the bus's `KvStore`: a changed key is a `KvConflictError`. The bucket is the
 * stream `KV_<bucket>`, kept with the bus's replicas like its other streams.
 *
 * Compare-and-set is not nats.js's `kv.update`/`kv.create` alone. On a replicated stream, nats-server
 * 2.9 checks a write's expected last sequence of its subject against what the leader has applied,
 * not against writes it has proposed and not yet applied: two writes on the same revision sent
 * together both succeed (40 % of such pairs on a three-node cluster), and one of them is lost. Each
 * write also carries the message id `<key>@<revision>`; the leader does track the ids it has
 * proposed, so the second write on one revision is a duplicate and is answered as a conflict
 * (`packages/platform/test/nats-kv-replicated.int.test.ts`). A revision is a stream sequence, used
 * once; only the create of a key that never held a value (`@0`) repeats, and the bucket's duplicate
 * window is never longer than its TTL, after which such a key is gone.
 *
 * Reads go to the bucket's leader unless `reads: 'any'`, not "direct" to any copy: a follower answers
 * from what it has applied, which trails the leader by a few writes in steady state and by everything
 * it missed while it was down. A stale read of the API-key cache would let a replaced signing key or a
 * revoked key stand (D2.5); the test reads through a node catching up after a restart. The rate
 * limiter's buckets take any copy: their reads go on through a leader election, and a stale one only
 * makes a compare-and-set fail.
 */
export async function natsKvStore(kvm: Kvm, jsm: JetStreamManager, bucket: string, opts: KvOptions & { replication: StreamReplicas }): Promise<KvStore> {
  const { replication } = opts;
  const direct = opts.reads === 'any';
  const kv: KV = await kvm.create(bucket, { history: 1, replicas: replication.count, allow_direct: direct, ...(opts.ttlMs ? { ttl: opts.ttlMs } : {}) })
    .catch((err: unknown) => {
      throw replication.refusal(err);
    });
  await replication.apply(`KV_${bucket}`);
  const js = jsm.jetstream();
  const conflict = (key: string) => (err: unknown): never => {
    if (isApiError(err, JetStreamApiCodes.StreamWrongLastSequence) || /wrong last sequence/i.test(String((err as Error)?.message))) {
      throw new KvConflictError(key);
    }
    throw err;
  };
  /** Writes `value` if the key's last revision is `revision` (0: the key holds nothing, not even a delete marker). */
  const writeOn = async (key: string, value: string, revision: number): Promise<number> => {
    const ack = await js.publish(`$KV.${bucket}.${key}`, value, { expect: { lastSubjectSequence: revision }, msgID: `${key}@${revision}` }).catch(conflict(key));
    if (ack.duplicate) throw new KvConflictError(key);
    return ack.seq;
  };
  return {
    async get(key) {
      const e = await kv.get(key);
      if (!e || e.operation !== 'PUT') return null;
      return { value: e.string(), revision: e.revision };
    },
    async getLatest(key) {
      // Through the stream's API, which its leader answers, not a direct get.
      const m = await jsm.streams.getMessage(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.${key}` }).catch((err: unknown) => {
        if (isApiError(err, JetStreamApiCodes.NoMessageFound) || /no message found/i.test(String((err as Error)?.message))) return null;
        throw err;
      });
      const operation = m?.header?.get('KV-Operation');
      if (!m || operation === 'DEL' || operation === 'PURGE') return null;
      return { value: m.string(), revision: m.seq };
    },
    async create(key, value) {
      try {
        return await writeOn(key, value, 0);
      } catch (err) {
        if (!(err instanceof KvConflictError)) throw err;
        // A deleted key keeps its delete marker: created again on the marker's revision (as nats.js does).
        const e = await kv.get(key);
        if (e && (e.operation === 'DEL' || e.operation === 'PURGE')) return writeOn(key, value, e.revision);
        throw err;
      }
    },
    update: (key, value, revision) => writeOn(key, value, revision),
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
