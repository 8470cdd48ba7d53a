/**
 * A map of at most `max` entries that forgets the least recently set one when full: for what a
 * replica remembers of its own recent writes, to save a read, never as the truth.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly max: number) {}

  set(key: K, value: V): void {
    // Most recent last: the first key is the one to forget.
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
