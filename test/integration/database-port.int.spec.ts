import { randomUUID } from 'node:crypto';
import { coreModules, createKernel, inTransaction, preparedStatementsServiceIdentifier, sqlDate, sqlStatement, type DatabaseAdapter, type Kernel } from '@trellis/core';
import { testDatabases, type TestDatabaseHandle } from '@trellis/test-support';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface UserRow {
  id: string;
  name: string;
}

const insertUser = sqlStatement(
  'test.port_insert_user',
  'insert into "users" ("id", "email", "name", "status", "is_site_admin", "is_developer", "is_administrator", "created_at", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
);

/**
 * An adapter written against the port before it had `poolStats`, `mergeCommitted` and
 * `PreparedStatements.execute`, and whose ORM options leave MikroORM's own entity manager: the
 * kernel falls back to MikroORM's public API for each.
 */
function withoutOptionalMethods(adapter: DatabaseAdapter): DatabaseAdapter {
  return {
    dialect: adapter.dialect,
    description: adapter.description,
    prepare: adapter.prepare ? () => adapter.prepare!() : undefined,
    ormOptions: (migrations) => ({ ...adapter.ormOptions(migrations), entityManager: undefined }),
    afterConnect: adapter.afterConnect ? (orm) => adapter.afterConnect!(orm) : undefined,
    statements: (orm) => {
      const inner = adapter.statements(orm);
      return { dialect: inner.dialect, all: inner.all, first: inner.first, run: inner.run };
    },
  };
}

const variants = [
  { name: 'the bundled adapter', adapt: (adapter: DatabaseAdapter) => adapter, bundled: true },
  { name: 'an adapter without the optional methods', adapt: withoutOptionalMethods, bundled: false },
];

// What the kernel asks of the Database port past MikroORM's public API, with the bundled adapters'
// methods and with the portable fallbacks of an adapter that lacks them: the same behaviour.
describe.each(testDatabases())('the Database port on $name', (database) => {
  describe.each(variants)('with $name', ({ adapt, bundled }) => {
    let handle: TestDatabaseHandle;
    let kernel: Kernel;

    beforeAll(async () => {
      handle = await database.create();
      kernel = createKernel({ database: adapt(handle.adapter), modules: coreModules, logger: pino({ level: 'silent' }), config: { auth: { jwtSecret: 'x'.repeat(40) } } });
      await kernel.start({ jobs: false });
    });
    afterAll(async () => {
      await kernel?.stop();
      await handle?.drop();
    });

    const addUser = async (name: string): Promise<string> => {
      const id = randomUUID();
      const at = new Date();
      await kernel.get(preparedStatementsServiceIdentifier).run(insertUser, [id, `${id}@example.com`, name, 'active', false, false, false, at, at]);
      return id;
    };

    it('uses the adapter’s entity manager when it gives one', () => {
      expect(kernel.fork().constructor.name === 'EntityManagerWithoutAsyncFlushContext').toBe(bundled);
    });

    it('merges what inTransaction committed into the entity manager it was called on', async () => {
      const keptId = await addUser('before');
      const em = kernel.fork();
      const kept = await em.findOneOrFail<UserRow>('User', keptId);
      const createdId = randomUUID();
      await inTransaction(em, async (tx) => {
        const inTx = await tx.findOneOrFail<UserRow>('User', keptId);
        inTx.name = 'after';
        const at = new Date();
        tx.persist(tx.create('User', { id: createdId, email: `${createdId}@example.com`, name: 'created', status: 'active', isSiteAdmin: false, isDeveloper: false, isAdministrator: false, createdAt: at, updatedAt: at }));
      });
      const work = em.getUnitOfWork();
      // The object `em` already held stays the one it holds, with the committed state as its snapshot.
      expect(work.getById('User', keptId)).toBe(kept);
      expect(work.getOriginalEntityData(kept)).toMatchObject({ name: 'after' });
      expect(kept.name).toBe('after');
      expect((work.getById('User', createdId) as UserRow | undefined)?.name).toBe('created');
      expect((await kernel.fork().findOneOrFail<UserRow>('User', keptId)).name).toBe('after');
    });

    it('runs a statement once with its values, in a transaction or on the pool (execute)', async () => {
      const id = await addUser('plain');
      const sql = kernel.get(preparedStatementsServiceIdentifier);
      const at = new Date('2026-05-06T07:08:09.123Z');
      const update = sqlStatement('test.port_update', 'update "users" set "name" = ?, "updated_at" = ?, "is_developer" = ? where "id" = ? returning "name", "updated_at", "is_developer"');
      const tx = kernel.fork();
      await tx.begin();
      const rows = await sql.execute!<Record<string, unknown>>(update, ["it's ? $1", at, true, id], tx);
      expect(rows).toHaveLength(1);
      expect(rows[0]!['name']).toBe("it's ? $1");
      expect(sqlDate(rows[0]!['updated_at'])!.getTime()).toBe(at.getTime());
      await tx.rollback();
      const read = sqlStatement('test.port_read', 'select "name" from "users" where "id" = ?');
      expect(await sql.execute!(read, [id])).toEqual([{ name: 'plain' }]);
      // As the ORM reads what it wrote.
      await sql.execute!(update, ['again', at, true, id], kernel.fork());
      const user = await kernel.fork().findOneOrFail<{ id: string; updatedAt: Date; isDeveloper: boolean }>('User', id);
      expect(user.updatedAt.getTime()).toBe(at.getTime());
      expect(user.isDeveloper).toBe(true);
    });

    it('reports the connection pool when the adapter can read it', async () => {
      await kernel.fork().getConnection().execute('select 1');
      const text = await kernel.metrics.render();
      expect(/trellis_db_pool_connections\{state="used"\} \d/.test(text)).toBe(bundled);
    });
  });
});
