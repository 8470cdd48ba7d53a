/**
 * The items at ranks `offset`…`offset + limit − 1` of `count` items in the order `compare` gives
 * (a total order: no two items compare equal), without sorting them all (at 100,000
 * services a listing sorted every match with its tie-breaks, 150 ms when a sort key tied for all).
 *
 * Two selections (quickselect, expected linear) put the `offset + limit` first items before the
 * rest, then the page's items after the `offset` first; only the page is sorted. Returns the page's
 * item numbers, in order.
 */
export function selectPage(count: number, compare: (a: number, b: number) => number, offset: number, limit: number): number[] {
  const end = Math.min(count, offset + limit);
  if (offset >= end) return [];
  const order = new Int32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  if (end < count) select(order, 0, count - 1, end - 1, compare);
  if (offset > 0) select(order, 0, end - 1, offset, compare);
  return Array.from(order.subarray(offset, end)).sort(compare);
}

/**
 * Rearranges `a[lo…hi]` so that `a[k]` is the item that belongs there in order, every item before
 * it comes before it and every item after it comes after it (Hoare's partition, middle pivot).
 */
function select(a: Int32Array, lo: number, hi: number, k: number, compare: (x: number, y: number) => number): void {
  while (lo < hi) {
    const pivot = a[(lo + hi) >>> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (compare(a[i]!, pivot) < 0) i++;
      while (compare(a[j]!, pivot) > 0) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    // Now a[lo…j] ≤ pivot ≤ a[i…hi], and anything between equals the pivot.
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}
