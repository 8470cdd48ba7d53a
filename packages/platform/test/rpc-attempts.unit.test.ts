import { describe, expect, it } from 'vitest';
import { askKeyedWrite, OUTCOME_UNKNOWN } from '../src/rpc-attempts.js';
import { BusUnavailableError } from '../src/bus/types.js';

// A keyed write's first copy can be lost with a NATS server (the gateway's, or the one the replica
// holding it was connected to): the repeat under its key is sent when the server is lost, not when
// a fifth of the timeout is left.

const TIMEOUT_MS = 5_000;
/** A first copy that is never answered: it times out as the bus does. */
const lostCopy = (timeoutMs: number) => new Promise<unknown>((_, reject) => setTimeout(() => reject(new BusUnavailableError('rpc', 'timeout')), timeoutMs));

describe('a keyed write through the loss of a NATS server', () => {
  it('is asked again under its key as soon as a server is lost, and answered by the repeat', async () => {
    let lose!: () => void;
    let listening = 0;
    const serverLost = (listener: () => void) => {
      lose = listener;
      listening++;
      return () => void listening--;
    };
    const started = Date.now();
    let againAt = 0;
    const call = askKeyedWrite(lostCopy, TIMEOUT_MS, () => false, async () => ((againAt = Date.now()), { ok: true, status: 201 }), serverLost);
    await new Promise((r) => setTimeout(r, 50));
    lose();
    expect(await call).toEqual({ reply: { ok: true, status: 201 }, again: true });
    expect(againAt - started).toBeLessThan(1_000);
    expect(listening).toBe(0); // settled: no longer listening
  });

  it('without a server lost, waits for the first copy until a fifth of the timeout is left', async () => {
    const started = Date.now();
    let againAt = 0;
    const call = askKeyedWrite(lostCopy, 1_000, () => false, async () => ((againAt = Date.now()), { ok: true, status: 200 }), () => () => undefined);
    expect(await call).toMatchObject({ again: true });
    expect(againAt - started).toBeGreaterThanOrEqual(790);
  });

  it('is still unknown when neither copy answers', async () => {
    const never = (timeoutMs: number) => lostCopy(timeoutMs);
    let lose!: () => void;
    const call = askKeyedWrite(lostCopy, 600, () => false, never, (l) => ((lose = l), () => undefined));
    lose();
    expect(await call).toBe(OUTCOME_UNKNOWN);
  });
});
