import type { MikroORM } from '@mikro-orm/core';
import { coreModules, createKernel, isSchemaExtra, ormServiceIdentifier } from '@trellis/core';
import { testDatabases } from '@trellis/test-support';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

// The migrations of every module build exactly the schema the entities describe, on each dialect,
// and can be rolled all the way back and applied again.
describe.each(testDatabases())('migrations on $name', (db) => {
  it('match the entities, and go down and up again', async () => {
    const handle = await db.create();
    const kernel = createKernel({ database: handle.adapter, modules: coreModules, logger: pino({ level: 'silent' }), config: { auth: { jwtSecret: 'x'.repeat(32) } } });
    try {
      const applied = await kernel.migrate.up();
      expect(applied.length).toBeGreaterThan(0);
      const orm = kernel.get(ormServiceIdentifier) as MikroORM;
      // What migrations write by hand and no entity describes (`schemaExtras`) is not drift.
      const drift = (await orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false }))
        .split(/;\s*\n/)
        .map((statement) => statement.trim())
        .filter((statement) => statement && !isSchemaExtra(statement, coreModules));
      expect(drift, 'entities changed without a migration: run `pnpm migration:create <module>`').toEqual([]);
      expect((await kernel.migrate.status()).pending).toEqual([]);

      const reverted = await kernel.migrate.down({ steps: applied.length });
      expect(reverted).toEqual([...applied].reverse());
      expect((await kernel.migrate.status()).executed).toEqual([]);
      expect(await kernel.migrate.up()).toEqual(applied);
    } finally {
      await kernel.stop();
      await handle.drop();
    }
  });
});
