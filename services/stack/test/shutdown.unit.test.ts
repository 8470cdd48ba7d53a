import { describe, expect, it } from 'vitest';
import type { Logger } from '@aex/platform';
import { stopStack } from '../src/infra/shutdown.js';

// The local stack's stop order: services, then the servers it started (last first), then the lock —
// always, so Ctrl-C never leaves Postgres or nats-server running behind the exchange.

function recorder() {
  const steps: string[] = [];
  const logger = { warn: (_o: unknown, msg: string) => steps.push(`warn: ${msg}`), error: (_o: unknown, msg: string) => steps.push(`error: ${msg}`) } as unknown as Logger;
  const server = (name: string, fail = false) => ({ stop: async () => { steps.push(`stop ${name}`); if (fail) throw new Error(name); } });
  return { steps, logger, server, release: async () => void steps.push('release') };
}

describe('stopping the local stack', () => {
  it('stops the services, then the servers last started first, then releases the data directory', async () => {
    const r = recorder();
    await stopStack(r.logger, { services: async () => void r.steps.push('services'), servers: [r.server('postgres'), r.server('nats')], release: r.release });
    expect(r.steps).toEqual(['services', 'stop nats', 'stop postgres', 'release']);
  });

  it('stops the servers anyway when the services do not finish in time (a query still running), and says so', async () => {
    const r = recorder();
    await stopStack(r.logger, { services: () => new Promise(() => undefined), servers: [r.server('postgres'), r.server('nats')], release: r.release, withinMs: 30 });
    expect(r.steps).toEqual(['warn: the services did not stop in time; stopping Postgres and nats-server under them', 'stop nats', 'stop postgres', 'release']);
  });

  it('stops the servers when the services fail, then gives the failure back', async () => {
    const r = recorder();
    await expect(stopStack(r.logger, { services: async () => { throw new Error('pool'); }, servers: [r.server('postgres')], release: r.release })).rejects.toThrow('pool');
    expect(r.steps).toEqual(['stop postgres', 'release']);
  });

  it('goes on to the next server when one fails to stop', async () => {
    const r = recorder();
    await stopStack(r.logger, { services: async () => undefined, servers: [r.server('postgres'), r.server('nats', true)], release: r.release });
    expect(r.steps).toEqual(['stop nats', 'error: a local server did not stop', 'stop postgres', 'release']);
  });
});
