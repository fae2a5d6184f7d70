import { cpSync, existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

/**
 * The console (`@trellis/console`, a Vite build) is copied into `dist/console/`, so the published
 * host serves it at /console without the console package (see src/console-module.ts). The
 * workspace builds the console first: it is a devDependency of this package.
 */
function copyConsole(): void {
  const dist = join(dirname(createRequire(import.meta.url).resolve('@trellis/console/package.json')), 'dist');
  if (!existsSync(join(dist, 'index.html'))) throw new Error(`The console is not built (${dist}): run the workspace build.`);
  rmSync('dist/console', { recursive: true, force: true });
  cpSync(dist, 'dist/console', { recursive: true });
}

export default defineConfig({
  ...packageBuild,
  onSuccess: async () => copyConsole(),
});
