import { pino, type DestinationStream, type Logger, type LevelWithSilent, type LoggerOptions } from 'pino';
import pretty from 'pino-pretty';
import { trace } from '@opentelemetry/api';

export type { Logger };

/** `auto`: readable lines for a person at a terminal, JSON lines for everything else (collectors, files). */
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * pino logger for a process; every line carries the process name (`app`) and, inside a span, its
 * trace and span ids. Services bind `service` on a child, so one process can host several. Pretty
 * lines are formatted on the same thread, synchronously (no transport worker).
 */
export function createLogger(app: string, level: LevelWithSilent | string = 'info', format: LogFormat = 'auto', destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
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
  };
  // A destination of the caller's own (a test reading what was logged) gets JSON lines.
  if (destination) return pino(options, destination);
  const human = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  if (!human) return pino(options);
  return pino(options, pretty({
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,app,service,req,res,responseTime,traceId,spanId',
    messageFormat: '{if service}{service}: {end}{msg}{if req.method} {req.method} {req.url}{end}{if res.statusCode} → {res.statusCode}{end}',
    singleLine: true,
  }));
}
