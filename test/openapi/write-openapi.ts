// Writes docs/openapi.json, the OpenAPI document every gateway serves at /v1/openapi.json, for a
// local exchange (http://127.0.0.1:8080), and test/openapi/exchange-api.ts, its TypeScript types
// made by openapi-typescript, and docs/api-routes.md, the route reference. `pnpm openapi` runs it; test/openapi/openapi.int.test.ts checks that
// both are current, that Redocly's linter finds no error and that the types compile.
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openApiDocument, routes } from '@aex/gateway';
import { loadConfig } from '@aex/platform';
import { apiRoutesMarkdown } from './api-routes.js';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const documentPath = `${repoRoot}docs/openapi.json`;
export const typesPath = `${repoRoot}test/openapi/exchange-api.ts`;
export const routesPath = `${repoRoot}docs/api-routes.md`;

export function localDocument(): string {
  return `${JSON.stringify(openApiDocument(routes, loadConfig({}).EXCHANGE_VERSION, 'http://127.0.0.1:8080'), null, 2)}\n`;
}

/** docs/api-routes.md: every route and resource, from the document. */
export function routesReference(): string {
  return apiRoutesMarkdown(JSON.parse(localDocument()));
}

/** openapi-typescript's output for a document file (its CLI, as a user would run it). */
export function typesOf(file: string): string {
  return execFileSync(`${repoRoot}test/node_modules/.bin/openapi-typescript`, [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(documentPath, localDocument());
  writeFileSync(typesPath, typesOf(documentPath));
  writeFileSync(routesPath, routesReference());
  console.log(`wrote ${documentPath}, ${typesPath} and ${routesPath}`);
}
