import { helper, RawQueryFragment, UnitOfWork, type CountOptions, type EntityManager, type EntityMetadata, type EntityName, type FilterQuery, type FindOptions, type Loaded } from '@mikro-orm/core';

/**
 * MikroORM (6.6, and 7 alike) marks "this code runs inside a flush" with a module-level
 * `AsyncLocalStorage`: every `em.flush()` goes through `insideFlush.run(…)`. On Node 20 the first
 * `AsyncLocalStorage#run` switches on promise hooks for the whole process, for good, so the first
 * write of any kind (even one through `inTransaction`) made every later `await` slower. MikroORM
 * has no option to avoid it, so the adapters' entity managers use the unit of work below: the same
 * commit, with "inside a flush" kept as the unit of work's own busy flag instead of an async
 * context. Trellis's `test/integration/promise-hooks.int.spec.ts` fails if a write switches hooks on.
 *
 * What differs from MikroORM's own: a flush started by a flush event handler on the same entity
 * manager waits in the flush queue (MikroORM throws `cannotCommit` there), and no auto-flush runs
 * on an entity manager while it flushes (MikroORM skips auto-flush only within the flush's own
 * async chain). Trellis's handlers do not flush, and an entity manager is not shared by concurrent
 * requests, so neither shows.
 *
 * It uses members of MikroORM's UnitOfWork that are private in its typings (see
 * {@link UnitOfWorkInternals}); the adapters' `internals` tests fail when an upgrade changes them.
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

/** The members of MikroORM 6.6's UnitOfWork (private in its typings) that `commit` uses. */
export interface UnitOfWorkInternals {
  /** MikroORM's own "a commit is under way" flag, read by its `commit` and `shouldAutoFlush`. */
  working: boolean;
  flushQueue: Array<() => Promise<void>>;
  doCommit(): Promise<void>;
  postCommitCleanup(): void;
}

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

/** An entity manager class: MikroORM's `entityManager` option. */
export type EntityManagerClass<EM extends EntityManager = EntityManager> = new (...args: never[]) => EM;

const derived = new WeakMap<object, EntityManagerClass>();

/**
 * `Base` (the driver's entity manager class, `EntityManager` of `@mikro-orm/sqlite` or
 * `@mikro-orm/postgresql`) with a unit of work whose flush enters no async context, in every
 * instance and fork (forks use their parent's class). Give it as MikroORM's `entityManager` option.
 */
export function withoutAsyncFlushContext<EM extends EntityManager>(Base: EntityManagerClass<EM>): EntityManagerClass<EM> {
  const known = derived.get(Base);
  if (known) return known as EntityManagerClass<EM>;
  const Derived = class EntityManagerWithoutAsyncFlushContext extends (Base as unknown as new (...args: unknown[]) => EntityManager) {
    constructor(...args: unknown[]) {
      super(...args);
      // `unitOfWork` is a private field of MikroORM's EntityManager, set in its constructor.
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
  derived.set(Base, Derived as unknown as EntityManagerClass);
  return Derived as unknown as EntityManagerClass<EM>;
}

/**
 * Makes what a committed transaction fork knows visible to the entity manager it was forked from,
 * as `em.transactional` does (MikroORM 6.6's `TransactionManager.mergeEntitiesToParent`): entities
 * in `deleted` leave the parent's identity map; an entity the parent holds another object for
 * passes its data and snapshot to that object (so the parent's object shows the committed state
 * and is not written again), unless the fork's is an uninitialized reference and the parent's is
 * loaded; any other entity joins the parent's identity map. It writes members of the entity
 * wrapper that are internal in MikroORM's typings (`__data`, `__originalEntityData`); MikroORM 6.6's
 * public `em.merge(entity, { keepIdentity: true, refresh: true, cascade: false })` does the same
 * copy, but MikroORM 7 drops `keepIdentity`.
 */
export function mergeCommittedFork(parent: EntityManager, fork: EntityManager, deleted: readonly object[]): void {
  const parentWork = parent.getUnitOfWork(false);
  for (const entity of deleted) parentWork.unsetIdentity(entity);
  for (const entity of fork.getUnitOfWork(false).getIdentityMap()) {
    const own = helper(entity);
    const existing = parentWork.getById<object>(own.__meta.className, own.getPrimaryKey() as never, undefined, true);
    if (existing && existing !== entity) {
      const known = helper(existing);
      if (!own.__initialized && known.__initialized) continue;
      known.__data = own.__data;
      known.__originalEntityData = own.__originalEntityData;
    } else {
      parentWork.merge(entity, new Set([entity]));
    }
  }
}
