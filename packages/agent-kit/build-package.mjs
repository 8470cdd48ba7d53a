// Builds a package of the workspace that people install (the client, the CLI, the MCP server) into
// dist/: one ES module and one declaration file. What it uses of the workspace's private packages
// (@aex/contracts, @aex/agent-kit, the client) is inlined, since those are not published; the
// registry packages it names in `external` stay dependencies of the published package.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

/**
 * @param {string} dir the package's folder (with a trailing slash)
 * @param {{ platform: 'neutral' | 'node', external: string[] }} opts `external`: package names (a trailing `/*` for a scope)
 */
export async function buildPackage(dir, opts) {
  const patterns = opts.external.map((name) => new RegExp(`^${name.replace('/*', '/').replace(/[.]/g, '\\.')}${name.endsWith('/*') ? '' : '(/|$)'}`));
  rmSync(`${dir}dist`, { recursive: true, force: true });
  await build({
    entryPoints: [`${dir}src/index.ts`],
    outfile: `${dir}dist/index.js`,
    bundle: true,
    format: 'esm',
    platform: opts.platform,
    target: opts.platform === 'node' ? 'node20' : 'es2022',
    external: opts.external.flatMap((name) => (name.endsWith('/*') ? [name] : [name, `${name}/*`])),
    logLevel: 'warning',
  });
  const types = await rollup({
    input: `${dir}src/index.ts`,
    // Ajv's types come in through the contracts' validation helpers, which no published API names.
    external: (id) => patterns.some((re) => re.test(id)) || /^(node:|ajv|fast-uri)/.test(id),
    plugins: [dts({ respectExternal: true, tsconfig: `${dir}tsconfig.build.json` })],
    onwarn: (warning) => {
      throw new Error(`declarations: ${warning.message}`);
    },
  });
  await types.write({ file: `${dir}dist/index.d.ts`, format: 'es' });
  await types.close();
}
