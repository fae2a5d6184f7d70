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
    // The module-door rules add to this list in modules, ports and the kernel; they do not replace it.
    for (const file of ['packages/core/src/modules/runs/x.ts', 'packages/core/src/modules/runs/services/engine/x.ts', 'packages/core/src/ports/x.ts', 'packages/core/src/kernel/http/x.ts']) {
      expect(await lint(file, "import knex from 'knex';\nexport { knex };\n"), file).toContain('no-restricted-imports');
    }
  });

  it('allows the published entry point, and internal imports inside core', async () => {
    expect(await lint('packages/host/src/x.ts', "import { createKernel } from '@trellis/core';\nexport { createKernel };\n")).toEqual([]);
    expect(await lint('packages/core/src/x.ts', "import { Router } from './kernel/http/router.js';\nexport { Router };\n")).toEqual([]);
  });

  it('lets a module reach another module only through its door (modules/<name>/index.js)', async () => {
    const refused = [
      ['packages/core/src/modules/blocks/routes.ts', '../runs/services/run.service.js'],
      ['packages/core/src/modules/blocks/services/x.ts', '../../runs/entities/run.entity.js'],
      ['packages/core/src/modules/runs/blocks/kinds/x.ts', '../../../identity/services/user.service.js'],
      ['packages/core/src/modules/runs/x.ts', '../index.js'],
      ['packages/core/src/modules/runs/x.ts', '../../index.js'],
      ['packages/core/src/modules/runs/services/x.ts', '../../../modules/blocks/routes.js'],
    ];
    for (const [file, from] of refused) expect(await lint(file!, `import { x } from '${from}';\nexport { x };\n`), `${file} ← ${from}`).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/modules/runs/x.ts', "export type { x } from '../blocks/entities/block.entity.js';\n")).toContain('no-restricted-imports');
    const allowed = [
      ['packages/core/src/modules/blocks/routes.ts', '../runs/index.js'],
      ['packages/core/src/modules/blocks/services/x.ts', '../../identity/index.js'],
      ['packages/core/src/modules/runs/blocks/kinds/x.ts', '../../../identity/index.js'],
      ['packages/core/src/modules/runs/blocks/kinds/x.ts', '../kind.js'],
      ['packages/core/src/modules/runs/services/x.ts', '../../../kernel/errors.js'],
      ['packages/core/src/modules/runs/services/x.ts', '../../../ports/run-store.js'],
      ['packages/core/src/modules/runs/runs.module.ts', '../../sandbox/quickjs-code-sandbox.js'],
      ['packages/core/src/modules/index.ts', './runs/runs.module.js'],
    ];
    for (const [file, from] of allowed) expect(await lint(file!, `import { x } from '${from}';\nexport { x };\n`), `${file} ← ${from}`).toEqual([]);
  });

  it('keeps modules out of ports and the kernel; kernel tests go through doors', async () => {
    expect(await lint('packages/core/src/ports/x.ts', "import type { x } from '../modules/tools/vdb/filter.js';\nexport type { x };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/ports/x.ts', "import type { x } from '../modules/tools/index.js';\nexport type { x };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/kernel/http/x.ts', "import { x } from '../../modules/identity/index.js';\nexport { x };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/kernel/x.spec.ts', "import { x } from '../modules/realtime/topics.js';\nexport { x };\n")).toContain('no-restricted-imports');
    expect(await lint('packages/core/src/kernel/x.spec.ts', "import { x } from '../modules/realtime/index.js';\nexport { x };\n")).toEqual([]);
  });
});
