import { randomUUID } from 'node:crypto';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Migration } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects, Type, type MessageDef } from '@aex/contracts';
import { ack, connectServiceDb, createPlatformTablesV1, createPlatformTablesV3, OutboxRelay, Transactor, type Bus, type PlatformTables } from '../src/index.js';
import { createTestBus, createTestDatabase, eventually, testLogger, type TestDatabase } from '../src/testing/index.js';

// Trace context crosses the bus (W3C headers): an RPC handler and a consumer of an event written
// through the outbox continue the trace of the code that called or wrote them; the relay's own
// polling belongs to no request.

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');
let bus: Bus;
let dispose: () => Promise<void>;
let database: TestDatabase;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  ({ bus, dispose } = await createTestBus('jetstream'));
  database = await createTestDatabase();
});
afterAll(async () => {
  await dispose?.();
  await database?.drop();
  trace.disable();
  propagation.disable();
  context.disable();
});

const Ping = Type.Object({ n: Type.Integer() });
const pinged: MessageDef<typeof Ping> = { kind: 'event', owner: 'identity', type: 'test.traced', data: Ping };

describe('trace context over NATS', () => {
  it('continues the caller’s trace in the RPC handler', async () => {
    let seen = '';
    const server = await bus.serve(`${bus.namespace}.rpc.test.traced`, 'test', async () => {
      seen = trace.getActiveSpan()?.spanContext().traceId ?? '';
      return {};
    });
    const traceId = await tracer.startActiveSpan('caller', async (span) => {
      await bus.request(`${bus.namespace}.rpc.test.traced`, {}, { timeoutMs: 2000 });
      span.end();
      return span.spanContext().traceId;
    });
    await server.stop();
    expect(seen).toBe(traceId);
  });

  it('continues the trace of the transaction that wrote an outbox row in its consumer', async () => {
    const migrations: Record<string, Migration> = { '0001': { up: async (db) => (await createPlatformTablesV1(db), await createPlatformTablesV3(db)) } };
    const { db, close } = await connectServiceDb<PlatformTables>({ url: database.url, schema: 'traced', migrations });
    const relay = new OutboxRelay(db, bus, testLogger(), 50);
    const tx = new Transactor(db, relay);
    const consumed: string[] = [];
    const consumer = await bus.consume({
      stream: 'events',
      durable: `traced-${randomUUID().slice(0, 8)}`,
      filter: subjects.event(bus.namespace, pinged.type),
      handler: async () => (consumed.push(trace.getActiveSpan()?.spanContext().traceId ?? ''), ack()),
    });
    try {
      const traceId = await tracer.startActiveSpan('request', async (span) => {
        await tx.run(async (_trx, work) => work.enqueue(pinged, { n: 1 }));
        relay.start();
        span.end();
        return span.spanContext().traceId;
      });
      await eventually(async () => consumed.length === 1);
      expect(consumed[0]).toBe(traceId);
      // A row written later outside any request, handed to the relay (whose drains were started from
      // inside that request), does not join the request's trace.
      await tx.run(async (_trx, work) => work.enqueue(pinged, { n: 2 }));
      await eventually(async () => consumed.length === 2);
      expect(consumed[1]).not.toBe(traceId);
      const publishes = exporter.getFinishedSpans().filter((s) => s.name.startsWith('publish '));
      expect(publishes.filter((s) => s.spanContext().traceId === traceId)).toHaveLength(1);
    } finally {
      await relay.stop();
      await consumer.stop();
      await close();
    }
  });
});
