/**
 * Writes docs/configuration.md from the configuration schemas (`pnpm docs:config`).
 * Runs on the TypeScript sources (tsx with scripts/tsconfig.json paths), so no build is needed.
 * `--check` exits 1 instead of writing when the file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { coreModules } from '@trellis/core';
import { renderConfigurationDocs } from '../src/config-docs.js';

const target = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));
const text = renderConfigurationDocs(coreModules);
const current = (() => {
  try {
    return readFileSync(target, 'utf8');
  } catch {
    return undefined;
  }
})();

if (process.argv.includes('--check')) {
  if (current !== text) {
    console.error(`${target} is stale: run pnpm docs:config`);
    process.exit(1);
  }
  console.log(`${target} is up to date.`);
} else if (current === text) {
  console.log(`${target} is up to date.`);
} else {
  writeFileSync(target, text);
  console.log(`Wrote ${target}.`);
}
