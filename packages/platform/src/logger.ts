import { pino, type Logger, type LevelWithSilent } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger };

/** pino logger; every line carries the service name and, inside a span, its trace and span ids. */
export function createLogger(service: string, level: LevelWithSilent | string = 'info'): Logger {
  return pino({
    level: level as LevelWithSilent,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const span = trace.getActiveSpan();
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { traceId, spanId };
    },
    redact: { paths: ['req.headers.authorization', '*.apiKey', '*.email'], censor: '[redacted]' },
  });
}
