import { TransactionEventBroadcaster, type EntityManager } from '@mikro-orm/core';
import { databaseOf } from './dialect.js';

/**
 * Runs `work` in a database transaction on a fork of `em`: the fork is flushed and committed when
 * `work` resolves and rolled back when it throws. Called on an entity manager that is already in
 * a transaction, it opens a savepoint inside that transaction instead.
 *
 * This is what `em.transactional` does, minus one thing: `em.transactional` binds the fork to
 * MikroORM's `AsyncLocalStorage` transaction context, and on Node 20 the first
 * `AsyncLocalStorage#run` switches on promise hooks for the whole process, for good, so that every
 * later `await` anywhere (cached reads, JSON-RPC frames) pays for them. Here the fork is passed
 * explicitly and no async context is entered. Every transaction in Trellis goes through this
 * function; `test/integration/promise-hooks.int.spec.ts` fails if a write switches hooks on.
 *
 * Entities the transaction loaded or created are merged back into `em` after the commit (as
 * `em.transactional` does), so a caller may keep using what `work` returned. That step reaches into
 * MikroORM's unit of work, so the database adapter does it (`DatabaseAdapter.mergeCommitted`); with
 * an adapter that has no such method, this runs `em.transactional` itself.
 */
export async function inTransaction<E extends EntityManager, T>(em: E, work: (tx: E) => T | Promise<T>): Promise<T> {
  const database = databaseOf(em);
  if (!database?.mergeCommitted) return em.transactional((tx) => work(tx as E));
  const parent = em.getTransactionContext();
  const tx = em.fork({ clear: false, cloneEventManager: true }) as E;
  tx.setTransactionContext(
    await tx.getConnection('write').begin({
      ctx: parent,
      eventBroadcaster: new TransactionEventBroadcaster(tx, undefined, { topLevelTransaction: !parent }),
    }),
  );
  const deleted: object[] = [];
  tx.getEventManager().registerSubscriber({
    afterFlush: (args) => {
      for (const changeSet of args.uow.getChangeSets()) {
        if (changeSet.type === 'delete' || changeSet.type === 'delete_early') deleted.push(changeSet.entity);
      }
    },
  });
  let result: T;
  try {
    result = await work(tx);
    await tx.flush();
    await tx.getConnection('write').commit(tx.getTransactionContext()!, new TransactionEventBroadcaster(tx));
  } catch (error) {
    const trx = tx.getTransactionContext();
    if (trx) {
      try {
        await tx.getConnection('write').rollback(trx, new TransactionEventBroadcaster(tx));
      } catch {
        // The original failure is the one worth reporting; a failed rollback ends with the connection.
      }
    }
    throw error;
  } finally {
    tx.resetTransactionContext();
  }
  database.mergeCommitted(em, tx, deleted);
  return result;
}
