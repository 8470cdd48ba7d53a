import { describe, expect, it } from 'vitest';
import type { RpcReply } from '@aex/contracts';
import { encodeReply, fitItems, fitReply } from '../src/reply-budget.js';
import { testLogger } from '../src/testing/index.js';
import { encodeMessage, PayloadTooLargeError } from '../src/bus/types.js';

// Bus payload discipline: what does not fit is cut where a reply allows it, else a logged 500 —
// never a reply the bus silently refuses.

const item = (i: number, size: number) => ({ i, pad: 'x'.repeat(size) });

describe('reply budget', () => {
  it('keeps the longest prefix of items that fits, in order', () => {
    const items = Array.from({ length: 10 }, (_, i) => item(i, 100));
    const one = JSON.stringify(items[0]).length;
    expect(fitItems(items, 2 + 3 * one + 2).map((x) => x.i)).toEqual([0, 1, 2]);
    expect(fitItems(items, 1_000_000)).toHaveLength(10);
    expect(fitItems(items, 10)).toEqual([]);
  });

  it('cuts a list page to what fits and says there is more', () => {
    const data = Array.from({ length: 100 }, (_, i) => item(i, 1000));
    const page: RpcReply = { ok: true, status: 200, data, pagination: { total: 250, limit: 100, offset: 20, hasMore: true } };
    const cut = fitReply(page, 20_000);
    expect(cut.ok && cut.data).toHaveLength(19);
    expect(cut.ok && cut.pagination).toEqual({ total: 250, limit: 100, offset: 20, hasMore: true });
    expect(Buffer.byteLength(JSON.stringify(cut))).toBeLessThanOrEqual(20_000);
    const last: RpcReply = { ok: true, status: 200, data: data.slice(0, 5), pagination: { total: 25, limit: 100, offset: 20, hasMore: false } };
    expect(fitReply(last, 20_000)).toBe(last);
  });

  it('answers a logged 500 for a reply that neither fits nor can be cut, and for one that cannot be encoded', () => {
    const huge: RpcReply = { ok: true, status: 200, data: { blob: 'x'.repeat(5000) } };
    expect(JSON.parse(Buffer.from(encodeReply(huge, 1000, testLogger())).toString())).toMatchObject({ ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR' }] });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(JSON.parse(Buffer.from(encodeReply({ ok: true, status: 200, data: circular }, 1000, testLogger())).toString())).toMatchObject({ status: 500 });
    expect(Buffer.from(encodeReply({ ok: true, status: 200, data: { a: 1 } }, 1000, testLogger())).toString()).toBe('{"ok":true,"status":200,"data":{"a":1}}');
  });

  it('refuses a message over the bus limit before sending it', () => {
    expect(() => encodeMessage('s', { pad: 'x'.repeat(100) }, 50)).toThrow(PayloadTooLargeError);
    expect(encodeMessage('s', { a: 1 }, 50)).toEqual(Buffer.from('{"a":1}'));
  });
});
