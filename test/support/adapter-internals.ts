import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { EntitySchema, MikroORM, type EntityManager } from '@mikro-orm/core';
import { sqlStatement, type DatabaseAdapter, type PreparedStatements } from '@trellis/core';
import { supportedVersions, type UnitOfWorkInternals } from '@trellis/db-mikro-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/**
 * The version of package `name` as `from` (a file path) resolves it: the package.json of the
 * directory its entry point is in, or the nearest one above it with that name.
 */
export function installedVersion(from: string, name: string): string {
  let dir = dirname(createRequire(from).resolve(name));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (manifest.name === name) return manifest.version;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`No package.json of ${name} above ${from}`);
    dir = parent;
  }
}

/** The entry point of package `name` as `from` resolves it (to resolve that package's own dependencies from). */
export const resolvedFrom = (from: string, name: string): string => createRequire(from).resolve(name);

/** `version` is in `range`: `6.6` means 6.6.x, `3` means 3.x. */
export const inRange = (version: string, range: string): boolean => version === range || version.startsWith(`${range}.`);

export interface AdapterInternalsOptions {
  /** The adapter under test, on a database of its own (or a shared one: the suite's table has a random name). */
  adapter: () => DatabaseAdapter;
  /** The installed versions of the packages whose internals the adapter reaches into, by package name, and the ranges it supports. */
  versions: () => Record<string, { installed: string; supported: string }>;
}

class Note {
  id!: string;
  body!: string;
}

/**
 * What a SQL database adapter does past MikroORM's public API, on a real database: the unit of work
 * without an async context, `mergeCommitted`, `poolStats` and the statement runner's `execute`, each
 * checked against the members of MikroORM and knex it relies on. Pinned to the releases named in
 * `versions`: an upgrade fails the first test until the code and the ranges are reviewed.
 */
export function describeAdapterInternals(name: string, options: AdapterInternalsOptions): void {
  describe(`${name}: what the adapter reaches past MikroORM's public API for`, () => {
    const table = `trellis_internals_${randomBytes(4).toString('hex')}`;
    const schema = new EntitySchema<Note>({
      class: Note,
      tableName: table,
      properties: { id: { type: 'string', primary: true }, body: { type: 'text' } },
    });
    let adapter: DatabaseAdapter;
    let orm: MikroORM;
    let statements: PreparedStatements;

    beforeAll(async () => {
      adapter = options.adapter();
      await adapter.prepare?.();
      orm = await MikroORM.init({ ...adapter.ormOptions([]), entities: [schema], allowGlobalContext: false, debug: false, discovery: { warnWhenNoEntities: false } });
      await adapter.afterConnect?.(orm);
      await orm.em.getConnection().execute(`create table "${table}" ("id" varchar(64) primary key, "body" text not null)`);
      statements = adapter.statements(orm);
    });
    afterAll(async () => {
      if (!orm) return;
      await orm.em.getConnection().execute(`drop table if exists "${table}"`);
      await orm.close(true);
    });

    const fork = (): EntityManager => orm.em.fork();
    const insert = async (id: string, body: string) => {
      const em = fork();
      em.persist(em.create(Note, { id, body }));
      await em.flush();
    };

    it('runs on the releases its internals were written for', () => {
      const versions = options.versions();
      for (const [pkg, range] of Object.entries(supportedVersions)) expect(versions[pkg]?.supported, `${pkg} is pinned by the test`).toBe(range);
      for (const [pkg, { installed, supported }] of Object.entries(versions)) {
        expect(inRange(installed, supported), `${pkg} ${installed} is not in the supported range ${supported}: review @trellis/db-mikro-orm and this adapter's statements before widening it`).toBe(true);
      }
    });

    it('flushes with its own unit of work, in no async context, with the members of MikroORM it uses', async () => {
      const em = fork();
      expect(em.constructor.name).toBe('EntityManagerWithoutAsyncFlushContext');
      const work = em.getUnitOfWork() as unknown as UnitOfWorkInternals & object;
      expect(work.constructor.name).toBe('UnitOfWorkWithoutAsyncContext');
      // MikroORM's own members the override drives: a changed name fails here, not in production.
      expect(work.working).toBe(false);
      expect(Array.isArray(work.flushQueue)).toBe(true);
      expect(typeof work.doCommit).toBe('function');
      expect(typeof work.postCommitCleanup).toBe('function');

      const seen: boolean[] = [];
      em.getEventManager().registerSubscriber({ onFlush: () => void seen.push(work.working) });
      const run = vi.spyOn(AsyncLocalStorage.prototype, 'run');
      try {
        em.persist(em.create(Note, { id: 'uow-1', body: 'one' }));
        const first = em.flush();
        // A second flush while the first commits waits in MikroORM's flush queue, then commits.
        em.persist(em.create(Note, { id: 'uow-2', body: 'two' }));
        const second = em.flush();
        await Promise.all([first, second]);
        expect(run).not.toHaveBeenCalled();
      } finally {
        run.mockRestore();
      }
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every(Boolean)).toBe(true);
      expect(work.working).toBe(false);
      expect((await fork().find(Note, { id: { $in: ['uow-1', 'uow-2'] } }, { orderBy: { id: 'asc' } })).map((n) => n.body)).toEqual(['one', 'two']);
    });

    it('counts a page without an async context (findAndCount)', async () => {
      const run = vi.spyOn(AsyncLocalStorage.prototype, 'run');
      try {
        const [items, total] = await fork().findAndCount(Note, { id: { $like: 'uow-%' } }, { limit: 1 });
        expect(items).toHaveLength(1);
        expect(total).toBe(2);
        expect(run).not.toHaveBeenCalled();
      } finally {
        run.mockRestore();
      }
    });

    it('merges a committed fork into its parent (mergeCommitted)', async () => {
      await insert('merge-1', 'before');
      await insert('merge-2', 'kept');
      await insert('merge-3', 'gone');
      const parent = fork();
      const known = await parent.findOneOrFail(Note, 'merge-1');
      const loaded = await parent.findOneOrFail(Note, 'merge-2');
      const doomed = await parent.findOneOrFail(Note, 'merge-3');

      const tx = parent.fork({ clear: true });
      const changed = await tx.findOneOrFail(Note, 'merge-1');
      expect(changed).not.toBe(known);
      changed.body = 'after';
      const created = tx.create(Note, { id: 'merge-4', body: 'new' });
      tx.persist(created);
      // Only a reference in the fork: the parent's loaded entity must keep its own state.
      tx.getReference(Note, 'merge-2');
      const removed = await tx.findOneOrFail(Note, 'merge-3');
      tx.remove(removed);
      await tx.flush();

      const snapshot = { ...tx.getUnitOfWork().getOriginalEntityData(changed) };
      const loadedSnapshot = { ...parent.getUnitOfWork().getOriginalEntityData(loaded) };
      adapter.mergeCommitted!(parent, tx, [removed]);

      const parentWork = parent.getUnitOfWork();
      expect(parentWork.getById(Note.name, 'merge-1')).toBe(known);
      expect(parentWork.getOriginalEntityData(known)).toEqual(snapshot);
      expect(parentWork.getOriginalEntityData(known)).toMatchObject({ body: 'after' });
      // The parent's object shows the committed value (MikroORM keeps scalars in the wrapper's data).
      expect(known.body).toBe('after');
      expect(loaded.body).toBe('kept');
      expect(parentWork.getById(Note.name, 'merge-4')).toBe(created);
      expect(parentWork.getOriginalEntityData(loaded)).toEqual(loadedSnapshot);
      expect(parentWork.getById(Note.name, 'merge-3')).toBeUndefined();
      expect(doomed.id).toBe('merge-3');
    });

    it("reads the pool's state (poolStats)", async () => {
      await fork().getConnection().execute('select 1');
      const idle = adapter.poolStats!(orm)!;
      expect(idle.used).toBe(0);
      expect(idle.pending).toBe(0);
      expect(idle.free).toBeGreaterThanOrEqual(1);
      const em = fork();
      await em.begin();
      try {
        await em.getConnection().execute('select 1', [], 'all', em.getTransactionContext());
        expect(adapter.poolStats!(orm)!.used).toBe(1);
      } finally {
        await em.rollback();
      }
      expect(adapter.poolStats!(orm)!.used).toBe(0);
    });

    it('runs a statement once with its values bound, on the pool or in a transaction (execute)', async () => {
      const awkward = `it's ? a $1 '' "x" \\ ${'y'.repeat(200_000)}`;
      await insert('exec-1', 'plain');
      const updated = await statements.execute!<{ id: string; body: string }>(sqlStatement('test.update', `update "${table}" set "body" = ? where "id" = ? returning "id", "body"`), [awkward, 'exec-1']);
      expect(updated).toEqual([{ id: 'exec-1', body: awkward }]);
      expect(await statements.execute!(sqlStatement('test.none', `update "${table}" set "body" = ? where "id" = ?`), ['x', 'missing'])).toEqual([]);

      const em = fork();
      await em.begin();
      try {
        await statements.execute!(sqlStatement('test.insert', `insert into "${table}" ("id", "body") values (?, ?)`), ['exec-2', 'in tx'], em);
        // The transaction's connection sees its own row (the pool's does not, before the commit).
        expect(await statements.execute!(sqlStatement('test.read', `select "body" from "${table}" where "id" = ?`), ['exec-2'], em)).toEqual([{ body: 'in tx' }]);
        expect(await statements.first(sqlStatement('test.read_prepared', `select "body" from "${table}" where "id" = ?`), ['exec-2'], em)).toEqual({ body: 'in tx' });
      } finally {
        await em.rollback();
      }
      expect(await statements.execute!(sqlStatement('test.read', `select "body" from "${table}" where "id" = ?`), ['exec-2'])).toEqual([]);
    });
  });
}
