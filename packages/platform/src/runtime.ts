import { ConfigError, type ExchangeConfig } from './config.js';
import { MemoryBus } from './bus/memory-bus.js';
import { NatsBus } from './bus/nats-bus.js';
import type { Bus } from './bus/types.js';
import type { Logger } from './logger.js';
import type { HealthCheck } from './health.js';

/** Connects to NATS JetStream when a URL is given, else the in-process bus (one-process stack only). */
export async function connectBus(cfg: Pick<ExchangeConfig, 'NATS_URL' | 'BUS_NAMESPACE' | 'NATS_REPLICAS'>, name: string, opts: { allowMemory: boolean; logger?: Logger }): Promise<Bus> {
  if (cfg.NATS_URL) return NatsBus.connect(cfg.NATS_URL, cfg.BUS_NAMESPACE, name, opts.logger, { replicas: cfg.NATS_REPLICAS });
  if (!opts.allowMemory) throw new Error('NATS_URL is required to run a service on its own (the in-process bus only joins services of one process).');
  return new MemoryBus(cfg.BUS_NAMESPACE);
}

/** Anything started that must be stopped; a service also says whether it is ready (its `/readyz`). */
export interface Component {
  stop(): Promise<void>;
  checks?(): Promise<HealthCheck[]>;
}

/**
 * `stop` made to run once: a second call (a test that stopped a service early, then its teardown)
 * gets the first call's promise instead of stopping everything again.
 */
export function once(stop: () => Promise<void>): () => Promise<void> {
  let stopped: Promise<void> | undefined;
  return () => (stopped ??= stop());
}

/**
 * Stops on SIGINT/SIGTERM with grace, exit code 0. A second signal exits at once with 1 — unless it
 * comes within a second of the first: Ctrl-C reaches the process both from the terminal and relayed
 * by the package manager that started it, and that is still one request to stop.
 */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  let stoppingSince: number | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppingSince !== null) {
      if (Date.now() - stoppingSince < SAME_SIGNAL_MS) return;
      logger.warn({ signal }, 'stopping at once');
      process.exit(1);
    }
    stoppingSince = Date.now();
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    stop()
      .then(flushTelemetry)
      .then(() => {
        logger.info('stopped');
        process.exit(0);
      })
      .catch((err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

const SAME_SIGNAL_MS = 1000;

/** Flushes OpenTelemetry when the bootstrap (telemetry/register.ts) started it; at most 5 s. */
async function flushTelemetry(): Promise<void> {
  const shutdown = (globalThis as Record<symbol, unknown>)[Symbol.for('aex.telemetry.shutdown')];
  if (typeof shutdown !== 'function') return;
  await Promise.race([(shutdown as () => Promise<void>)(), new Promise((r) => setTimeout(r, 5000).unref())]);
}

/** A setting a standalone service cannot run without (D16: the message names the variable). */
export function required<K extends keyof ExchangeConfig>(cfg: ExchangeConfig, name: K, who: string): NonNullable<ExchangeConfig[K]> {
  const value = cfg[name];
  if (value === undefined || value === null || value === '') throw new ConfigError(String(name), `is required to run ${who} on its own.`);
  return value as NonNullable<ExchangeConfig[K]>;
}

/** A start-up refused for a reason the operator can act on: printed as one line, exit code 1. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/**
 * Runs a process's start-up: a configuration problem ends it with one line naming the variable and
 * exit code 1; any other start-up failure is printed with its cause, also with exit code 1.
 */
export async function runMain(start: () => Promise<void>): Promise<void> {
  try {
    await start();
  } catch (err) {
    // Before a logger exists: plain stderr is the only channel.
    // eslint-disable-next-line no-console
    if (err instanceof ConfigError || err instanceof StartupError) console.error(err.message);
    // eslint-disable-next-line no-console
    else console.error('Start-up failed:', err);
    process.exit(1);
  }
}
