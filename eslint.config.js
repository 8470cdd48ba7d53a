import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.data/**', '**/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  // The layout of a service (docs/architecture.md "Layout of a service"): `domain/` holds pure rules —
  // no database, bus, network or file I/O, and nothing from the service's features (types of its
  // schema only); features never reach into the wiring at the service's root; nothing leaves its
  // service but through a package.
  {
    files: ['services/*/src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...['pg', 'fastify', 'node:fs', 'node:fs/promises', 'node:http', 'node:https', 'node:dns', 'node:dns/promises', 'node:child_process', 'undici'].map((name) => ({ name, message: 'domain/ holds pure rules: I/O belongs to a feature folder.' })),
          { name: 'kysely', importNames: ['Kysely', 'Transaction', 'CompiledQuery'], message: 'domain/ holds pure rules: queries run in a feature\'s repository.' },
        ],
        patterns: [
          { group: ['@nats-io/*', '@fastify/*'], message: 'domain/ holds pure rules: I/O belongs to a feature folder.' },
          { group: ['../*', '!../db', '../db/*', '!../db/schema.js'], message: 'domain/ imports only domain/ (and types from db/schema).' },
          { group: ['../db/schema.js'], allowTypeImports: true, message: 'domain/ takes only types from db/schema.' },
        ],
      }],
    },
  },
  {
    files: ['services/*/src/*/**/*.ts'],
    ignores: ['services/*/src/domain/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['../service.js', '../main.js', '../index.js', '../../service.js', '../../main.js', '../../index.js'], message: 'A feature does not reach into its service\'s wiring: the wiring imports the features.' },
          { group: ['../../../*', '!../../../../docs'], message: 'A service is reached through its package, not a relative path out of it.' },
        ],
      }],
    },
  },
  // `db/` (schema and migrations) is the service's tables: it takes nothing from its features.
  ...[
    { files: ['services/*/src/db/*.ts'], group: ['../*', '!../domain', '../../*'] },
    { files: ['services/*/src/db/*/*.ts'], group: ['../../*', '!../../domain', '../../../*'] },
  ].map(({ files, group }) => ({
    files,
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group, message: 'db/ takes nothing from the service\'s features or wiring (only db/ and domain/), nor from outside the service.' }],
      }],
    },
  })),
  {
    files: ['services/*/src/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['../../*'], message: 'A service is reached through its package, not a relative path out of it.' }] }] },
  },
  // Small files (STYLE.md 7): one over 400 lines holds more than one subject and is split by subject;
  // tests too (what a test file's parts share goes to a kit beside them). The OpenAPI types are
  // generated from the contracts, one file by nature, and read by no one line by line.
  { files: ['**/*.{ts,mts,cts,js,mjs,cjs}'], ignores: ['test/openapi/exchange-api.ts'], rules: { 'max-lines': ['error', 400] } },
  // Small functions (STYLE.md 7): one over 80 lines does several things; the parts get names of their
  // own. Migrations are frozen in time (a shipped migration is never edited), so they keep their shape.
  {
    files: ['services/*/src/**/*.{ts,js,mjs}', 'packages/*/src/**/*.{ts,js,mjs}', 'services/gateway/console/**/*.{ts,js,mjs}', 'examples/**/*.{ts,js,mjs}'],
    ignores: ['services/*/src/db/migrations/**'],
    rules: { 'max-lines-per-function': ['error', 80] },
  },
  { files: ['test/conformance/**', 'services/stack/src/main.ts', 'packages/*/bench/**', 'test/bench/**', 'test/openapi/write-openapi.ts'], rules: { 'no-console': 'off' } },
  // Programs people run with node: the examples, the bins of the published packages, and their builds.
  { files: ['examples/**/*.mjs', 'packages/*/build.mjs', 'packages/*/build-package.mjs', 'packages/*/bin/*.js'], languageOptions: { globals: globals.node }, rules: { 'no-console': 'off' } },
  // The web console's script runs in the browser (services/gateway/console, served as is).
  { files: ['services/gateway/console/**/*.js'], languageOptions: { globals: globals.browser, sourceType: 'module' } },
);
