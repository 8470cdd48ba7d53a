import { defineConfig } from 'vitest/config';

// Three tiers (docs/testing.md): pure unit tests, integration tests on real Postgres and NATS JetStream,
// and end-to-end tests through the gateway. Each integration/e2e file isolates itself (own database,
// own NATS namespace), so files run in parallel against the shared servers.
//
// Every test stands alone: within a file, tests run in an order shuffled by a fixed seed (the same
// order every run, so a failure reproduces), which a test relying on what another left behind does
// not survive. `pnpm test:shuffled` runs them in a new order each time (the seed is printed).
const sequence = { shuffle: { files: false, tests: true }, seed: 20261127 };

export default defineConfig({
  test: {
    sequence,
    projects: [
      { test: { name: 'unit', include: ['**/*.unit.test.ts'], exclude: ['**/node_modules/**'] } },
      {
        test: {
          name: 'integration',
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**', 'packages/platform/test/bus-failover.int.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: ['test/e2e/chaos.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      // The chaos test and the bus's failover test time failover (a purchase goes on within seconds
      // of a NATS node's loss): `pnpm test` runs them after the others, one file at a time, so that
      // another file's load is not counted as failover's slowness.
      {
        test: {
          name: 'chaos',
          include: ['test/e2e/chaos.test.ts', 'packages/platform/test/bus-failover.int.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
