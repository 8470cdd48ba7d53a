import type { Logger } from '@aex/platform';

/**
 * How long the services may take to stop — answering what is in flight, acknowledging what they
 * consumed — before the servers under them are stopped anyway: well inside the 15 s after which the
 * process gives up (`stopOnSignals`), so that Postgres and nats-server are always stopped with it.
 */
export const SERVICES_STOP_MS = 8_000;

/**
 * The local stack's stop: the services first (bounded by `withinMs`), then the servers it started,
 * last first — whatever the services did, even if they failed or did not finish — then `release`
 * (the data directory's lock). A failure of the services is given back once the servers are down.
 */
export async function stopStack(logger: Logger, parts: {
  services: () => Promise<void>;
  servers: { stop(): Promise<void> }[];
  release: () => Promise<void>;
  withinMs?: number;
}): Promise<void> {
  const withinMs = parts.withinMs ?? SERVICES_STOP_MS;
  let timer: NodeJS.Timeout | undefined;
  try {
    const finished = await Promise.race([
      parts.services().then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), withinMs))),
    ]);
    if (!finished) logger.warn({ withinMs }, 'the services did not stop in time; stopping Postgres and nats-server under them');
  } finally {
    clearTimeout(timer);
    for (const server of [...parts.servers].reverse()) {
      await server.stop().catch((err: unknown) => logger.error({ err }, 'a local server did not stop'));
    }
    await parts.release();
  }
}
