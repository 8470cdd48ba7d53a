// Builds the published MCP server (agent-kit/build-package.mjs): the client, the agent kit and the
// contracts are inlined; the MCP SDK, @noble/*, TypeBox and Ajv stay dependencies.
import { buildPackage } from '../agent-kit/build-package.mjs';

await buildPackage(new URL('.', import.meta.url).pathname, {
  platform: 'node',
  external: ['@modelcontextprotocol/sdk', '@noble/*', '@sinclair/typebox', 'ajv', 'ajv-formats', 'jose'],
});
