// Builds the published package into dist/: one ES module and one declaration file, with what it
// uses of the workspace's @aex/contracts (the API's types, the signing-key proof text) inlined,
// since that package is not published. @noble/* stay dependencies; @sinclair/typebox gives the
// inlined contract types their shape.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const here = new URL('.', import.meta.url).pathname;
const external = [/^@noble\//, /^@sinclair\/typebox/, /^ajv/, /^fast-uri/];
rmSync(`${here}dist`, { recursive: true, force: true });
await build({
  entryPoints: [`${here}src/index.ts`],
  outfile: `${here}dist/index.js`,
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  external: ['@noble/*', '@sinclair/typebox'],
  logLevel: 'warning',
});
const types = await rollup({
  input: `${here}src/index.ts`,
  external: (id) => external.some((re) => re.test(id)),
  plugins: [dts({ respectExternal: true, tsconfig: `${here}tsconfig.build.json` })],
  onwarn: (warning) => {
    throw new Error(`declarations: ${warning.message}`);
  },
});
await types.write({ file: `${here}dist/index.d.ts`, format: 'es' });
await types.close();
