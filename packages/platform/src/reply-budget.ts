import type { RpcReply } from '@aex/contracts';
import type { Logger } from './logger.js';

/**
 * Bus payload discipline. NATS refuses a message over its `max_payload` (1 MiB by default), and a
 * reply it refuses never arrives: the caller would wait out its timeout and answer 503 for what is
 * really a size problem. So every reply is measured before it is sent: a page of a list keeps the
 * items that fit (`pagination.hasMore` says there are more), a handler with its own notion of "fewer"
 * (discovery) cuts with `fitItems`, and anything else too large becomes a logged 500 — never silence.
 */

/** Kept free below `max_payload` for the message's headers (trace context, request id). */
export const REPLY_HEADROOM_BYTES = 8 * 1024;

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

/** The longest prefix of `items` whose JSON array takes at most `budgetBytes`. */
export function fitItems<T>(items: T[], budgetBytes: number): T[] {
  let used = 2; // []
  for (let i = 0; i < items.length; i++) {
    used += bytesOf(items[i]) + (i > 0 ? 1 : 0);
    if (used > budgetBytes) return items.slice(0, i);
  }
  return items;
}

/** A list page cut to the items that fit the budget; every other reply as it is. */
export function fitReply(reply: RpcReply, budgetBytes: number): RpcReply {
  if (!reply.ok || !Array.isArray(reply.data) || !reply.pagination) return reply;
  const whole = bytesOf(reply);
  if (whole <= budgetBytes) return reply;
  const frame = bytesOf({ ...reply, data: [] });
  const kept = fitItems(reply.data, budgetBytes - frame + 2);
  return { ...reply, data: kept, pagination: { ...reply.pagination, hasMore: reply.pagination.offset + kept.length < reply.pagination.total } };
}

/**
 * The reply's bytes — encoded once; only a list page over the budget is cut and encoded again — or
 * those of a logged 500 when it cannot be encoded or does not fit.
 */
export function encodeReply(reply: RpcReply, budgetBytes: number, log: Logger): Uint8Array {
  let bytes: Buffer;
  try {
    bytes = Buffer.from(JSON.stringify(reply), 'utf8');
    if (bytes.length > budgetBytes) bytes = Buffer.from(JSON.stringify(fitReply(reply, budgetBytes)), 'utf8');
  } catch (err) {
    log.error({ err }, 'reply cannot be encoded');
    return Buffer.from(JSON.stringify(internal));
  }
  if (bytes.length <= budgetBytes) return bytes;
  log.error({ bytes: bytes.length, budget: budgetBytes }, 'reply exceeds the bus payload budget');
  return Buffer.from(JSON.stringify(internal));
}

const internal: RpcReply = { ok: false, status: 500, errors: [{ code: 'INTERNAL_ERROR', message: 'The answer is too large to be sent.' }] };
