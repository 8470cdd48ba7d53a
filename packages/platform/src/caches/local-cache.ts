import type { CacheMembership, Forget } from './membership.js';

interface Entry<V> {
  value: V;
  tags: string[];
  expiresAt: number;
}

/** Stores a value found by a lookup that began at a known epoch (see `LocalCache.begin`). */
export type Fill<V> = (key: string, tags: string[], value: V) => void;

/**
 * A replica's own memory of answers it would otherwise fetch over the network (docs/gateway-caches.md).
 *
 * - Read only while the membership's lease holds; otherwise every read misses.
 * - Each entry carries tags (an API-key hash, an agent, an account, a service). The owners'
 *   invalidations (identity's, the catalog's) name tags, and every entry with one of them is dropped.
 * - A fill stores only if nothing was forgotten since its lookup began (the membership's epoch), so
 *   an answer read before a change never outlives the change's invalidation.
 * - Bounded: entries expire after `ttlMs` and the oldest go first beyond `maxEntries`.
 */
export class LocalCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly byTag = new Map<string, Set<string>>();

  constructor(
    private readonly membership: CacheMembership,
    private readonly opts: { maxEntries: number; ttlMs: number },
    private readonly clock: () => number = () => performance.now(),
  ) {
    membership.onForget((f) => this.forget(f));
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    if (!this.membership.usable()) return undefined;
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= this.clock()) {
      this.remove(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * The value kept under `key`, else `load`'s, kept with the tags it names unless a change came
   * while it loaded: the plain read-through that `get` and `begin` make.
   */
  async through(key: string, load: () => Promise<V>, tagsOf: (value: V) => string[]): Promise<V> {
    const kept = this.get(key);
    if (kept !== undefined) return kept;
    const keep = this.begin();
    const value = await load();
    keep(key, tagsOf(value), value);
    return value;
  }

  /** Call before the lookup; the returned function stores its result unless a change came meanwhile. */
  begin(): Fill<V> {
    const epoch = this.membership.epoch;
    return (key, tags, value) => {
      if (this.membership.epoch !== epoch || !this.membership.usable()) return;
      this.remove(key);
      // A Map iterates in insertion order: the oldest entry goes first when the cache is full.
      if (this.entries.size >= this.opts.maxEntries) this.remove(this.entries.keys().next().value!);
      this.entries.set(key, { value, tags, expiresAt: this.clock() + this.opts.ttlMs });
      for (const t of tags) {
        let keys = this.byTag.get(t);
        if (!keys) this.byTag.set(t, (keys = new Set()));
        keys.add(key);
      }
    };
  }

  private forget(f: Forget): void {
    if (f === 'all') {
      this.entries.clear();
      this.byTag.clear();
      return;
    }
    for (const t of f.tags) for (const key of this.byTag.get(t) ?? []) this.remove(key);
  }

  private remove(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    for (const t of e.tags) {
      const keys = this.byTag.get(t);
      keys?.delete(key);
      if (keys?.size === 0) this.byTag.delete(t);
    }
  }
}
