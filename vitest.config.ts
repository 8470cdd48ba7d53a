import { defineConfig } from 'vitest/config';

// Three tiers (STYLE.md 9): pure unit tests, integration tests on real Postgres and NATS JetStream,
// and end-to-end tests through the gateway. Each integration/e2e file isolates itself (own database,
// own NATS namespace), so files run in parallel against the shared servers.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['**/*.unit.test.ts'], exclude: ['**/node_modules/**'] } },
      {
        test: {
          name: 'integration',
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
