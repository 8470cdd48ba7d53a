import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';
import type { MsgHeaders } from './types.js';

// Between the bus's messages and nats.js's: headers both ways, JSON payloads, JetStream's API errors.

const decoder = new TextDecoder();

/** Milliseconds as the nanoseconds JetStream's configuration takes. */
export const nanos = (ms: number) => ms * 1_000_000;

/** The bus's headers as nats.js's; none at all when there are none. */
export function toNatsHeaders(h: MsgHeaders | undefined): MsgHdrs | undefined {
  const entries = Object.entries(h ?? {});
  if (entries.length === 0) return undefined;
  const out = natsHeaders();
  for (const [k, v] of entries) out.set(k, v);
  return out;
}

/** nats.js's headers as the bus's: names in lower case, each with its first value. */
export function fromNatsHeaders(h: MsgHdrs | undefined): MsgHeaders {
  const out: MsgHeaders = {};
  if (!h) return out;
  for (const [k, v] of h) if (v[0] !== undefined) out[k.toLowerCase()] = v[0];
  return out;
}

/** A message's JSON payload (an empty one: null). */
export function parse(data: Uint8Array): unknown {
  if (data.length === 0) return null;
  return JSON.parse(decoder.decode(data));
}

/** Whether `err` is JetStream's API error `code`. */
export function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}
