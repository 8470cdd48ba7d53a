import type { FastifyBaseLogger } from 'fastify';
import type { Logger } from '@aex/platform';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;
type LogLevel = FastifyBaseLogger['level'];

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
type Write = (...args: unknown[]) => void;

/**
 * A request's logger that becomes a pino child only when it logs at an enabled level:
 * fastify makes a child per request, with its request id bound, and at the levels a busy exchange
 * runs at almost none of them ever writes a line — making them was 2 % of an authenticated read.
 * What is written is the same as from the child itself.
 */
class RequestLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(private readonly parent: FastifyBaseLogger, private readonly bindings: Bindings, private readonly opts: ChildLoggerOptions) {}

  get real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.opts));
  }

  /** Whether a line at `level` would be written: by the child once it exists (it may have a level of its own). */
  enabled(level: string): boolean {
    return ((this.#child ?? this.parent) as unknown as Logger).isLevelEnabled(level);
  }

  get level(): LogLevel {
    return (this.#child ?? this.parent).level;
  }

  set level(level: LogLevel) {
    this.real.level = level;
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, opts);
  }

  silent(): void {}
}

for (const level of LEVELS) {
  Object.defineProperty(RequestLogger.prototype, level, {
    value(this: RequestLogger, ...args: unknown[]) {
      if (this.enabled(level)) (this.real[level] as Write)(...args);
    },
  });
}

/** fastify's `childLoggerFactory`: the request's logger, made a pino child when first written to. */
export const requestLogger = (logger: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger =>
  new RequestLogger(logger, bindings, opts) as unknown as FastifyBaseLogger;
