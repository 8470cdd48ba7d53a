// Builds the published client (agent-kit/build-package.mjs): the contracts it uses are inlined;
// @noble/* and jose stay dependencies, and @sinclair/typebox gives the inlined contract types their shape.
import { buildPackage } from '../agent-kit/build-package.mjs';

await buildPackage(new URL('.', import.meta.url).pathname, { platform: 'neutral', external: ['@noble/*', '@sinclair/typebox', 'jose'] });
