import { randomUUID } from 'node:crypto';
import { GATEWAY_CACHES, type CacheInvalidation, type GatewayRegistryEntry } from '@aex/contracts';
import { KvConflictError, type Bus, type KvStore, type Stoppable } from '../bus/types.js';
import type { Logger } from '../logger.js';

/** What a replica's caches are told: forget these (by tag), or everything. */
export type Forget = { tags: string[] } | 'all';

export const keyTag = (keyHash: string) => `key:${keyHash}`;
export const agentTag = (agentId: string) => `agent:${agentId}`;
export const accountTag = (accountId: string) => `account:${accountId}`;
export const serviceTag = (serviceId: string) => `service:${serviceId}`;

/**
 * This replica's place among the replicas whose memory the owners of the data keep true (D2.5,
 * docs/gateway-caches.md): every gateway replica (principals, profiles: identity) and every
 * transactions replica (the delegation rules in force, D10.1: identity; services' current contracts:
 * the catalog). Its `role` only names it in the registry and the log.
 *
 * - It is listed in the registry while it lives and renews its entry every second with
 *   compare-and-set on the revision it wrote last.
 * - Its caches may be used only within `leaseMs` of the moment a renewal that the registry accepted
 *   was *sent* (`usable()`): a replica cut off from NATS stops answering from memory within the lease.
 * - The owner asks it to forget what changed and waits for the answer (`ReplicaCaches`). A replica
 *   that did not answer is fenced: the owner deletes its entry, waits out the lease, then answers. The fenced replica's
 *   next renewal then fails; it empties its caches before it lists itself again. A replica whose
 *   lease ran out empties them too when a renewal is accepted again: a fence that could not be
 *   written while the registry had no leader leaves no trace it could see.
 * - `epoch` changes whenever anything is forgotten: a cache fill that began before it is not stored,
 *   so a lookup that raced a change cannot put the old answer back (local-cache.ts).
 */
export class CacheMembership {
  readonly replicaId = randomUUID();
  private epochValue = 0;
  private leaseUntil = 0;
  private revision = 0;
  private renewing = false;
  private stopped = false;
  private readonly listeners: Array<(f: Forget) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private sub: Stoppable | undefined;

  private constructor(
    private readonly bus: Bus,
    private readonly registry: KvStore,
    private readonly logger: Logger,
    private readonly clock: () => number,
    private readonly role: string,
  ) {}

  static async start(bus: Bus, logger: Logger, clock: () => number = () => performance.now(), role = 'gateway'): Promise<CacheMembership> {
    const registry = await bus.kv(GATEWAY_CACHES.registry(bus.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs });
    const m = new CacheMembership(bus, registry, logger, clock, role);
    // Listening before listed: once identity can see this replica, it can reach it.
    m.sub = await bus.serve(GATEWAY_CACHES.forgetSubject(bus.namespace, m.replicaId), `${role}-${m.replicaId}`, async (data) => {
      m.forget(parseInvalidation(data));
      return { ok: true };
    });
    await m.register();
    m.timer = setInterval(() => void m.renew(), GATEWAY_CACHES.heartbeatMs);
    m.timer.unref();
    return m;
  }

  get epoch(): number {
    return this.epochValue;
  }

  /** Whether cached answers may be used now: within the lease of the last accepted renewal. */
  usable(): boolean {
    return !this.stopped && this.clock() < this.leaseUntil;
  }

  onForget(listener: (f: Forget) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Stops using the caches, then marks this replica's entry `left` and stops listening. Marked, not
   * deleted: identity may have listed this replica just before and find nobody listening; the mark
   * tells it that this replica's memory is gone for good, so it neither fences it nor waits out a
   * lease for it (a deleted entry is what a fence leaves, and must be waited out). The mark is a
   * compare-and-set on the last renewal: after a fence there is nothing to mark.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.forget('all');
    // A renewal under way lands before the mark, or fails after it without listing again.
    while (this.renewing) await new Promise((r) => setTimeout(r, 5));
    const left: GatewayRegistryEntry = { replicaId: this.replicaId, role: this.role, left: true };
    await this.registry.update(this.replicaId, JSON.stringify(left), this.revision).catch(() => undefined);
    await this.sub?.stop().catch(() => undefined);
  }

  private forget(f: Forget): void {
    this.epochValue++;
    for (const l of this.listeners) l(f);
  }

  private entry(): string {
    const entry: GatewayRegistryEntry = { replicaId: this.replicaId, role: this.role };
    return JSON.stringify(entry);
  }

  private async register(): Promise<void> {
    const sentAt = this.clock();
    this.revision = await this.registry.put(this.replicaId, this.entry());
    this.leaseUntil = sentAt + GATEWAY_CACHES.leaseMs;
  }

  private async renew(): Promise<void> {
    if (this.renewing || this.stopped) return;
    this.renewing = true;
    const sentAt = this.clock();
    // A lease that ran out may hide a missed change: a forget sent while this replica could not be
    // reached fences it, and a fence the owner could not write (the registry electing a leader) is
    // never seen here. So memory kept across a lapse is emptied before it is used again.
    const lapsed = sentAt >= this.leaseUntil;
    try {
      this.revision = await this.registry.update(this.replicaId, this.entry(), this.revision);
      if (lapsed) this.forget('all');
      this.leaseUntil = sentAt + GATEWAY_CACHES.leaseMs;
    } catch (err) {
      // Stopping: the entry was deleted on purpose, and nothing is listed again.
      if (this.stopped) return;
      if (err instanceof KvConflictError) {
        // Fenced by identity (or the entry expired while this replica could not renew): what is in
        // memory may have missed a change. Forget it all, then list this replica again.
        this.leaseUntil = 0;
        this.forget('all');
        this.logger.warn({ replicaId: this.replicaId }, `${this.role} caches fenced: emptied, registering again`);
        await this.register().catch(() => undefined);
      }
      // Any other failure: the registry is unreachable, and the lease runs out by itself.
    } finally {
      this.renewing = false;
    }
  }
}

/** Anything but a well-formed invalidation empties every cache: forgetting too much is always safe. */
function parseInvalidation(data: unknown): Forget {
  const d = data as Partial<CacheInvalidation> | null;
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const optional = (v: unknown): v is string[] | undefined => v === undefined || strings(v);
  if (!d || typeof d !== 'object' || !strings(d.keyHashes) || !strings(d.agentIds) || !optional(d.accountIds) || !optional(d.serviceIds)) return 'all';
  return { tags: [...d.keyHashes.map(keyTag), ...d.agentIds.map(agentTag), ...(d.accountIds ?? []).map(accountTag), ...(d.serviceIds ?? []).map(serviceTag)] };
}
