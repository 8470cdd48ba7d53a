import { describe, expect, it } from 'vitest';
import { once } from '../src/runtime.js';

describe('once', () => {
  it('stops one time: a second call, made while the first runs or after it, gets the first promise', async () => {
    let runs = 0;
    let finish!: () => void;
    const stop = once(() => {
      runs++;
      return new Promise<void>((resolve) => (finish = resolve));
    });
    const first = stop();
    const second = stop();
    expect(second).toBe(first);
    finish();
    await first;
    expect(stop()).toBe(first);
    expect(runs).toBe(1);
  });

  it('a stop that failed is not run again: every caller sees its error', async () => {
    let runs = 0;
    const stop = once(async () => {
      runs++;
      throw new Error('pool did not close');
    });
    await expect(stop()).rejects.toThrow('pool did not close');
    await expect(stop()).rejects.toThrow('pool did not close');
    expect(runs).toBe(1);
  });
});
