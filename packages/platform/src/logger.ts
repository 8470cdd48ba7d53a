import { pino, type Logger, type LevelWithSilent } from 'pino';
import { trace } from '@opentelemetry/api';

export type { Logger };

/**
 * pino logger for a process; every line carries the process name (`app`) and, inside a span, its
 * trace and span ids. Services bind `service` on a child, so one process can host several.
 */
export function createLogger(app: string, level: LevelWithSilent | string = 'info'): Logger {
  return pino({
    level: level as LevelWithSilent,
    base: { app },
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
