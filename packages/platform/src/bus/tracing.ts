import { context, propagation, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT, type Span } from '@opentelemetry/api';
import type { MsgHeaders } from './types.js';

const tracer = trace.getTracer('@aex/platform/bus');

/** W3C trace context of the active span, as message headers (trace context travels in NATS headers). */
export function injectTrace(headers: MsgHeaders = {}): MsgHeaders {
  propagation.inject(context.active(), headers);
  return headers;
}

/** Runs `fn` in a span that continues the trace carried by the message headers. */
export async function withMessageSpan<T>(name: string, kind: 'server' | 'consumer', headers: MsgHeaders, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  return tracer.startActiveSpan(name, { kind: kind === 'server' ? SpanKind.SERVER : SpanKind.CONSUMER }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * A client/producer span around an outgoing request or publish. Its parent is the trace carried in
 * `parentHeaders` when there is one (an outbox row remembers the request that wrote it), else the
 * active context.
 */
export async function withOutgoingSpan<T>(name: string, kind: 'client' | 'producer', fn: () => Promise<T>, parentHeaders?: MsgHeaders): Promise<T> {
  const parent = parentHeaders && parentHeaders.traceparent ? propagation.extract(ROOT_CONTEXT, parentHeaders) : context.active();
  return tracer.startActiveSpan(name, { kind: kind === 'client' ? SpanKind.CLIENT : SpanKind.PRODUCER }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` outside any trace. Background loops (outbox relay, timers) are started this way so that
 * a loop kicked from inside a request does not file all its later polling under that request's trace.
 */
export function outsideTrace<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}
