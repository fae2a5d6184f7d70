import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

/**
 * The API reference renderer (Scalar's self-contained browser build) is copied into
 * `dist/vendor/` so the published package serves it without depending on the renderer's own
 * package and its dependency tree (see src/modules/system/docs-page.ts).
 */
function copyRenderer(): void {
  const require = createRequire(import.meta.url);
  const source = require.resolve('@scalar/api-reference/browser/standalone.js');
  const { version, license } = JSON.parse(readFileSync(join(dirname(source), '../../package.json'), 'utf8')) as { version: string; license: string };
  mkdirSync('dist/vendor', { recursive: true });
  copyFileSync(source, 'dist/vendor/scalar-api-reference.js');
  writeFileSync(
    'dist/vendor/README.md',
    `scalar-api-reference.js is the browser build of @scalar/api-reference ${version} (${license} license), unchanged.\n`,
  );
}

// The CodeSandbox's worker thread is its own entry: `dist/quickjs-worker.js`, beside `dist/index.js`.
export default defineConfig({
  ...packageBuild,
  entry: { index: 'src/index.ts', 'quickjs-worker': 'src/sandbox/quickjs-worker.ts' },
  onSuccess: async () => copyRenderer(),
});
