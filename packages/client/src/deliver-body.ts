import type { DeliverBody } from '@aex/contracts';

const SHAPE = 'deliver(transactionId, { output, usage? }, { idempotencyKey? }) takes the body of POST /v1/transactions/{id}/deliver';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * D23.5: a delivery's body is refused before any request unless it is `{ output: {…}, usage? }`, so
 * a caller whose type checks were skipped (JavaScript, a cast) never spends one of the purchase's
 * delivery attempts on a body the exchange would read as an output failing its schema.
 */
export function checkDeliverBody(body: unknown, options: unknown): asserts body is DeliverBody {
  if (!isObject(body)) throw new TypeError(`${SHAPE}; the body given is not an object.`);
  const extra = Object.keys(body).filter((k) => k !== 'output' && k !== 'usage');
  if (!isObject(body.output)) {
    const hint = extra.length > 0 ? ` It has ${extra.map((k) => `"${k}"`).join(', ')}: an output goes inside { output }.` : '';
    throw new TypeError(`${SHAPE}; the body has no output object.${hint}`);
  }
  if (extra.length > 0) throw new TypeError(`${SHAPE}; the body has other keys too: ${extra.map((k) => `"${k}"`).join(', ')}.`);
  if (body.usage !== undefined && !isObject(body.usage)) throw new TypeError(`${SHAPE}; usage is { units }.`);
  if (isObject(options) && 'usage' in options) throw new TypeError(`${SHAPE}; usage goes in the body, beside output.`);
}
