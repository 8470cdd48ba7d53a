/**
 * OpenTelemetry bootstrap. Loaded before the application with `node --import` (TOOLCHAIN.md: under
 * ESM, starting the SDK from the app's first import loses the pg and http spans). It starts only
 * when an exporter is configured through the standard variables (`OTEL_TRACES_EXPORTER`,
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, …) and `OTEL_SDK_DISABLED` is not `true`; otherwise the API stays
 * a no-op and costs nothing. Spans cover HTTP (fastify), Postgres (pg), and NATS through the bus,
 * which carries W3C trace context in message headers.
 */
import { register } from 'node:module';

const env = process.env;
const configured = Boolean(env.OTEL_TRACES_EXPORTER || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_METRICS_EXPORTER);

if (configured && env.OTEL_SDK_DISABLED !== 'true') {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const { getNodeAutoInstrumentations } = await import('@opentelemetry/auto-instrumentations-node');
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? 'agent-exchange',
    instrumentations: [
      getNodeAutoInstrumentations({
        '@opentelemetry/instrumentation-fs': { enabled: false },
      }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
    ],
  });
  sdk.start();
  // Flushes what is buffered (spans, the last metrics) — called by the process's own shutdown
  // (runtime.ts stopOnSignals), which ends with process.exit and so never reaches 'beforeExit'.
  const shutdown = () => sdk.shutdown().catch(() => undefined);
  (globalThis as Record<symbol, unknown>)[Symbol.for('aex.telemetry.shutdown')] = shutdown;
  process.once('beforeExit', () => void shutdown());
}
