import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The lint rule that keeps adapters, the host and the CLI on @trellis/core's published entry points.
describe('import boundaries', () => {
  const eslint = new ESLint({ cwd: process.cwd() });
  const lint = async (file: string, code: string) => (await eslint.lintText(code, { filePath: file }))[0]!.messages.map((m) => m.ruleId);

  it('refuses core internals outside core', async () => {
    expect(await lint('packages/host/src/x.ts', "import { Router } from '@trellis/core/src/kernel/http/router.js';\nexport { Router };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/adapters/db-sqlite/src/x.ts', "import { x } from '../../../core/src/index.js';\nexport { x };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/cli/src/x.ts', "import { x } from '@trellis/core/dist/index.js';\nexport { x };\n")).toContain('no-restricted-imports');
  });

  it('keeps knex, the SQL drivers and MikroORM internals out of core', async () => {
    expect(await lint('packages/core/src/x.ts', "import knex from 'knex';\nexport { knex };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/x.ts', "import { SqlEntityManager } from '@mikro-orm/knex';\nexport { SqlEntityManager };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/x.ts', "import pg from 'pg';\nexport { pg };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/x.ts', "import { knexPoolStats } from '@trellis/db-mikro-orm';\nexport { knexPoolStats };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/x.ts', "import { MikroORM } from '@mikro-orm/core';\nexport { MikroORM };\n")).toEqual([]);
  });

  it('allows the published entry point, and internal imports inside core', async () => {
    expect(await lint('packages/host/src/x.ts', "import { createKernel } from '@trellis/core';\nexport { createKernel };\n")).toEqual([]);
    expect(await lint('packages/core/src/x.ts', "import { Router } from './kernel/http/router.js';\nexport { Router };\n")).toEqual([]);
  });
});
