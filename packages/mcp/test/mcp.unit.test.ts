import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { SpendingGuard } from '../src/spending.js';

/**
 * The rules of the MCP registry's server.json (schema 2025-09-29), transcribed: what the registry
 * checks of a server's name, description, version and npm package with its transport and variables.
 */
const SERVER_JSON_RULES = {
  type: 'object',
  required: ['$schema', 'name', 'description', 'version', 'packages'],
  properties: {
    $schema: { const: 'https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json' },
    name: { type: 'string', pattern: '^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$', minLength: 3, maxLength: 200 },
    title: { type: 'string', minLength: 1, maxLength: 100 },
    description: { type: 'string', minLength: 1, maxLength: 100 },
    version: { type: 'string', maxLength: 255, not: { pattern: '^[~^<>=]|[*x]$' } },
    packages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['registryType', 'identifier', 'version', 'transport'],
        properties: {
          registryType: { enum: ['npm', 'pypi', 'oci', 'nuget', 'mcpb'] },
          registryBaseUrl: { type: 'string', format: 'uri' },
          identifier: { type: 'string' },
          version: { type: 'string', minLength: 1, not: { const: 'latest' } },
          runtimeHint: { type: 'string' },
          transport: { type: 'object', required: ['type'], properties: { type: { enum: ['stdio', 'streamable-http', 'sse'] } } },
          environmentVariables: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: {
                name: { type: 'string' },
                description: { type: 'string' },
                isRequired: { type: 'boolean' },
                isSecret: { type: 'boolean' },
                format: { enum: ['string', 'number', 'boolean', 'filepath'] },
              },
            },
          },
        },
      },
    },
  },
};

describe('server.json for the MCP registry', () => {
  const serverJson = JSON.parse(readFileSync(new URL('../server.json', import.meta.url), 'utf8')) as { name: string; version: string; packages: Array<{ identifier: string; version: string; environmentVariables: Array<{ name: string; isSecret?: boolean }> }> };
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string; mcpName: string };

  it('validates against the registry schema rules', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    (addFormats as unknown as (a: Ajv) => void)(ajv);
    const validate = ajv.compile(SERVER_JSON_RULES);
    expect(validate(serverJson), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...serverJson, packages: [{ ...serverJson.packages[0], version: 'latest' }] })).toBe(false);
  });

  it('names the package as published: its name, its version, and the mcpName the registry verifies', () => {
    expect(serverJson.packages[0]).toMatchObject({ identifier: pkg.name, version: pkg.version });
    expect(serverJson.version).toBe(pkg.version);
    expect(pkg.mcpName).toBe(serverJson.name);
    const secrets = serverJson.packages[0]!.environmentVariables.filter((v) => v.isSecret).map((v) => v.name);
    expect(secrets).toEqual(['AEX_API_KEY', 'AEX_SIGNING_KEY']);
  });
});

describe('the spending guard', () => {
  it('counts each transaction at its highest commitment, refuses over the budget before the cap', () => {
    const guard = new SpendingGuard({ budgetCents: 1000, maxPerCallCents: 400 });
    expect(guard.check('a', 300)).toEqual({ verdict: 'ok', extra: 300 });
    guard.commit('a', 300);
    // A counter-offer raising the same transaction to 350 adds 50.
    expect(guard.check('a', 350)).toEqual({ verdict: 'ok', extra: 50 });
    guard.commit('a', 350);
    guard.commit('a', 200);
    expect(guard.state).toEqual({ budgetCents: 1000, spentCents: 350, remainingCents: 650, maxPerCallCents: 400 });
    expect(guard.check('b', 500).verdict).toBe('over_cap');
    expect(guard.check('b', 700).verdict).toBe('over_budget');
  });

  it('moves a purchase key to its transaction without counting twice', () => {
    const guard = new SpendingGuard({ budgetCents: 1000, maxPerCallCents: 1000 });
    guard.commit('key', 250);
    guard.rename('key', 'tx');
    guard.commit('tx', 250);
    expect(guard.state.spentCents).toBe(250);
    expect(guard.committedFor('tx')).toBe(250);
    // A retry under the same key is what it committed already: allowed even with no budget left.
    expect(guard.committedFor('key')).toBe(250);
    guard.commit('other', 750);
    expect(guard.check('key', 250)).toEqual({ verdict: 'ok', extra: 0 });
    expect(guard.check('new', 1).verdict).toBe('over_budget');
  });

  it('is off without a budget', () => {
    expect(new SpendingGuard({ budgetCents: 0, maxPerCallCents: 0 }).enabled).toBe(false);
  });
});
