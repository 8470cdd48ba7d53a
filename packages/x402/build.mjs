// Builds the published package (agent-kit/build-package.mjs): the exchange's own definitions of
// the scheme (@aex/contracts/x402-signing) are inlined; the official x402 packages and @noble/*
// stay dependencies — this package registers a scheme with them, it never copies them (D19.3).
import { buildPackage } from '../agent-kit/build-package.mjs';

await buildPackage(new URL('.', import.meta.url).pathname, { platform: 'neutral', external: ['@noble/*', '@x402/*'] });
