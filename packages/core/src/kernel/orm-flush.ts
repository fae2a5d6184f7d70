import { RawQueryFragment, UnitOfWork, type EntityManager, type EntityMetadata, type CountOptions, type EntityName, type FilterQuery, type FindOptions, type Loaded, type MikroORM } from '@mikro-orm/core';

/**
 * MikroORM (6.6, and 7 alike) marks "this code runs inside a flush" with a module-level
 * `AsyncLocalStorage`: every `em.flush()` goes through `insideFlush.run(…)`. On Node 20 the first
 * `AsyncLocalStorage#run` switches on promise hooks for the whole process, for good, so the first
 * write of any kind (even one through `inTransaction`) made every later `await` slower. MikroORM
 * has no option to avoid it, so Trellis's entity managers use the unit of work below: the same
 * commit, with "inside a flush" kept as the unit of work's own `working` flag instead of an async
 * context. `test/integration/promise-hooks.int.spec.ts` fails if a write switches hooks on.
 *
 * What differs from MikroORM's own: a flush started by a flush event handler on the same entity
 * manager waits in the flush queue (MikroORM throws `cannotCommit` there), and no auto-flush runs
 * on an entity manager while it flushes (MikroORM skips auto-flush only within the flush's own
 * async chain). Trellis's handlers do not flush, and an entity manager is not shared by concurrent
 * requests, so neither shows.
 */
class UnitOfWorkWithoutAsyncContext extends UnitOfWork {
  override async commit(): Promise<void> {
    const self = this as unknown as UnitOfWorkInternals;
    if (self.working) {
      // Another flush of this entity manager is under way: run after it, as MikroORM does.
      return new Promise<void>((resolve, reject) => {
        self.flushQueue.push(() => self.doCommit().then(resolve, reject));
      });
    }
    try {
      self.working = true;
      await self.doCommit();
      while (self.flushQueue.length) await self.flushQueue.shift()!();
    } finally {
      self.postCommitCleanup();
      self.working = false;
    }
  }

  override shouldAutoFlush<T extends object>(meta: EntityMetadata<T>): boolean {
    // A query issued while this unit of work commits must not flush it again (it would wait for
    // itself in the flush queue).
    if ((this as unknown as UnitOfWorkInternals).working) return false;
    return super.shouldAutoFlush(meta);
  }
}

/** The parts of MikroORM's UnitOfWork (private in its typings) that `commit` uses. */
interface UnitOfWorkInternals {
  working: boolean;
  flushQueue: Array<() => Promise<void>>;
  doCommit(): Promise<void>;
  postCommitCleanup(): void;
}

type EntityManagerClass = new (...args: never[]) => EntityManager;

/** Marks every raw SQL fragment used as a key in `where` (at any depth) as used once more. */
function useRawFragmentsOnceMore(where: unknown): void {
  if (typeof where !== 'object' || where === null) return;
  if (Array.isArray(where)) {
    for (const item of where) useRawFragmentsOnceMore(item);
    return;
  }
  for (const key of Object.keys(where)) {
    // A fragment's `toString` is what registers one use of it.
    if (RawQueryFragment.isKnownFragment(key)) String(RawQueryFragment.getKnownFragment(key, false));
    useRawFragmentsOnceMore((where as Record<string, unknown>)[key]);
  }
}
const patched = new WeakSet<object>();

/** `Base` (the driver's entity manager class) with the unit of work above in every instance and fork. */
function withoutAsyncFlushContext(Base: EntityManagerClass): EntityManagerClass {
  const Derived = class EntityManagerWithoutAsyncFlushContext extends (Base as new (...args: unknown[]) => EntityManager) {
    constructor(...args: unknown[]) {
      super(...args);
      (this as unknown as { unitOfWork: UnitOfWork }).unitOfWork = new UnitOfWorkWithoutAsyncContext(this);
    }

    /**
     * MikroORM's `findAndCount` runs its two queries inside `RawQueryFragment.run`, an
     * `AsyncLocalStorage#run` that keeps the raw SQL fragments of `where` known until both
     * queries used them: the first paginated list of any kind switched promise hooks on. Here
     * each raw fragment of `where` counts one use more instead (each query uses it once).
     */
    override async findAndCount<Entity extends object, Hint extends string = never, Fields extends string = '*', Excludes extends string = never>(
      entityName: EntityName<Entity>,
      where: FilterQuery<NoInfer<Entity>>,
      options: FindOptions<Entity, Hint, Fields, Excludes> = {},
    ): Promise<[Loaded<Entity, Hint, Fields, Excludes>[], number]> {
      const em = this.getContext(false);
      await em.tryFlush(entityName, options);
      options.flushMode = 'commit';
      useRawFragmentsOnceMore(where);
      return Promise.all([em.find(entityName, where, options), em.count(entityName, where, options as CountOptions<Entity, Hint>)]);
    }
  };
  patched.add(Derived);
  return Derived as unknown as EntityManagerClass;
}

/**
 * Makes `orm.em` and every entity manager forked from it (forks use their parent's class) flush
 * without entering an async context. Call it right after `MikroORM.init`, before anything uses
 * `orm.em`.
 */
export function flushWithoutAsyncContext(orm: MikroORM): void {
  const Base = orm.em.constructor as EntityManagerClass;
  if (patched.has(Base)) return;
  orm.config.set('entityManager', withoutAsyncFlushContext(Base) as never);
  // MikroORM#createEntityManager (private in its typings) creates `orm.em` from the configured
  // class, as `MikroORM.init` did.
  (orm as unknown as { createEntityManager(): void }).createEntityManager();
}
