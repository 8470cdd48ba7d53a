/**
 * Asks `check` until it answers something or `ms` pass (5 ms between tries at first, doubling up to
 * 50 ms); what it answered, or undefined. How a request waits for its saga to decide.
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  let interval = 5;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, 50);
  }
}
