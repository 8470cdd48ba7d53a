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
  { files: ['test/conformance/**', 'services/stack/src/main.ts', 'packages/*/bench/**', 'test/bench/**', 'test/openapi/write-openapi.ts'], rules: { 'no-console': 'off' } },
  // Programs people run with node: the examples, the bins of the published packages, and their builds.
  { files: ['examples/**/*.mjs', 'packages/*/build.mjs', 'packages/*/build-package.mjs', 'packages/*/bin/*.js'], languageOptions: { globals: globals.node }, rules: { 'no-console': 'off' } },
);
