import { readFileSync } from 'node:fs';
import { coreModules } from '@trellis/core';
import { describe, expect, it } from 'vitest';
import { renderConfigurationDocs } from '../src/config-docs.js';
import { environmentVariables } from '../src/config-loader.js';

// docs/configuration.md is generated from the schemas. When this fails, run `pnpm docs:config`
// and commit the result.
describe('docs/configuration.md', () => {
  const file = new URL('../../../docs/configuration.md', import.meta.url);
  const rendered = renderConfigurationDocs(coreModules);

  it('is up to date with the configuration schemas (run `pnpm docs:config` when this fails)', () => {
    const current = readFileSync(file, 'utf8');
    // Compare line by line first, so a failure shows the stale lines rather than one long string.
    expect(current.split('\n'), 'docs/configuration.md is stale: run `pnpm docs:config`').toEqual(rendered.split('\n'));
  });

  it('documents every module section, every setting and every environment variable', () => {
    for (const module of coreModules) if (module.config) expect(rendered).toContain(`### \`${module.name}\``);
    for (const path of ['server.port', 'database.url', 'database.migrateOnStart', 'auth.jwtSecret', 'log.level']) expect(rendered).toContain(`| \`${path}\` |`);
    for (const variable of environmentVariables) expect(rendered).toContain(`| \`${variable.name}\` |`);
    expect(rendered).toContain('`TRELLIS__SERVER__MAX_BODY_BYTES`');
  });
});
