import { GATEWAY_CACHES, type CacheInvalidation, type GatewayRegistryEntry } from '@aex/contracts';
import { within } from '../bus/kv-deadlines.js';
import type { Bus, KvStore } from '../bus/types.js';
import type { Logger } from '../logger.js';

/**
 * The owner's side of the replicas' own memory (D2.5, docs/gateway-caches.md): after a change
 * commits, every replica listed in the registry (gateways; transactions replicas, which keep the
 * delegation rules in force and the services' current contracts) is told what to forget by the
 * service that owns the data (identity, the catalog), and the change is
 * answered only when each one has confirmed. A replica that does not confirm is fenced — its entry
 * deleted, so its next renewal fails and it empties its memory — and the lease it may still be
 * answering under is waited out. Either way no replica answers from the old state once the change
 * has been answered.
 */
export class ReplicaCaches {
  private constructor(
    private readonly bus: Bus,
    private readonly registry: KvStore,
    private readonly logger: Logger,
  ) {}

  static async open(bus: Bus, logger: Logger): Promise<ReplicaCaches> {
    return new ReplicaCaches(bus, await bus.kv(GATEWAY_CACHES.registry(bus.namespace), { ttlMs: GATEWAY_CACHES.registryTtlMs }), logger);
  }

  /** The listing that starts when the one under way ends: every forget asked meanwhile shares it. */
  private nextListing: Promise<string[]> | null = null;
  private listing: Promise<unknown> = Promise.resolve();

  /**
   * The registered replicas, from a listing of the registry started after this call (so after the
   * caller's commit: no replica registered before it is missed). Forgets that come while a listing is
   * under way share the next one: a burst of changes costs two listings, not one each.
   */
  private listedFromNow(): Promise<string[]> {
    this.nextListing ??= this.listing.then(() => {
      this.nextListing = null;
      const keys = this.list();
      this.listing = keys.catch(() => undefined);
      return keys;
    });
    return this.nextListing;
  }

  /**
   * The registry's keys, asked again until a listing answers or `LISTING_PATIENCE_MS` pass. A
   * listing that fails proves nothing about the replicas: one slow answer (a loaded server, a
   * bucket electing a leader) may come while they still renew their leases, so giving up at once
   * would leave them answering from memory a change they were never told of.
   */
  private async list(): Promise<string[]> {
    const giveUpAt = performance.now() + LISTING_PATIENCE_MS;
    for (;;) {
      try {
        return await within(this.registry.keys(), LISTING_TRY_MS, 'the gateway registry');
      } catch (err) {
        if (performance.now() >= giveUpAt) throw err;
        await sleep(100);
      }
    }
  }

  /** Tells every replica to forget what is named (any part may be left out) and waits for each. */
  async forget(named: Partial<CacheInvalidation>): Promise<void> {
    // Key hashes and agent ids always go on the wire: a replica takes a message without them as "forget everything".
    const what: CacheInvalidation = { ...named, keyHashes: named.keyHashes ?? [], agentIds: named.agentIds ?? [] };
    if (Object.values(what).every((ids: string[] | undefined) => !ids?.length)) return;
    let replicas: string[];
    try {
      replicas = await this.listedFromNow();
    } catch (err) {
      // Out of reach for longer than an election: the replicas' renewals go to the same registry, so
      // their leases lapse too. Wait one out; each empties its memory when renewed again (membership.ts).
      this.logger.error({ err }, 'gateway registry unreachable; waiting out the gateways’ lease');
      await sleep(GATEWAY_CACHES.leaseMs);
      return;
    }
    const fenced = (
      await Promise.all(
        replicas.map(async (id) => {
          try {
            await this.bus.request(GATEWAY_CACHES.forgetSubject(this.bus.namespace, id), what, { timeoutMs: GATEWAY_CACHES.ackTimeoutMs });
            return undefined;
          } catch {
            // Silent. One that stopped cleanly since the listing marked its entry `left` once its
            // memory was gone for good: nothing to fence or wait for.
            return (await this.hasLeft(id)) ? undefined : id;
          }
        }),
      )
    ).filter((id): id is string => id !== undefined);
    if (fenced.length === 0) return;
    // Deleted after the silence: a renewal accepted before the delete was sent before it, so one
    // lease from now every such replica has stopped answering from memory.
    await Promise.all(fenced.map((id) => this.fence(id)));
    this.logger.warn({ replicas: fenced }, 'gateway replicas did not confirm a cache invalidation; fenced, waiting out their lease');
    await sleep(GATEWAY_CACHES.leaseMs);
  }

  /**
   * Deletes a silent replica's entry, tried again for one lease. A delete that never lands is
   * covered all the same: the registry then takes no renewal either, and a replica whose lease ran
   * out empties its memory before it uses it again (membership.ts).
   */
  private async fence(id: string): Promise<void> {
    const giveUpAt = performance.now() + GATEWAY_CACHES.leaseMs;
    for (;;) {
      try {
        await this.registry.delete(id);
        return;
      } catch (err) {
        if (performance.now() >= giveUpAt) {
          this.logger.error({ err, replicaId: id }, 'could not fence a gateway replica');
          return;
        }
        await sleep(100);
      }
    }
  }

  /** Whether the replica's entry says it left; an unreadable entry counts as not (it is fenced). */
  private async hasLeft(id: string): Promise<boolean> {
    try {
      const entry = await this.registry.get(id);
      return entry !== null && (JSON.parse(entry.value) as Partial<GatewayRegistryEntry>).left === true;
    } catch {
      return false;
    }
  }
}

/** How long one listing of the registry may take before it is asked again. */
const LISTING_TRY_MS = 2_000;
/** How long a change keeps asking for the listing: longer than a NATS leader election (docs/messaging.md). */
const LISTING_PATIENCE_MS = 15_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
