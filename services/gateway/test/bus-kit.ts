import { afterEach } from 'vitest';
import type { Bus } from '@aex/platform';
import { createTestBus } from '@aex/platform/testing';

/** What a test started, stopped after it in reverse order. */
export const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A JetStream bus with a namespace of its own, removed after the test. */
export async function bus(): Promise<Bus> {
  const t = await createTestBus('jetstream');
  cleanups.push(() => t.dispose());
  return t.bus;
}
