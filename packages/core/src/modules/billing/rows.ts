import { raw, type EntityManager, type EntityName, type FilterQuery } from '@mikro-orm/core';

/**
 * Takes the write lock of one row inside a transaction, portably: an UPDATE that bumps the row's
 * `version` holds the row lock on PostgreSQL until the transaction ends (SQLite holds the database
 * write lock). Concurrent transactions touching the same row then run one after the other, and
 * the row read afterwards is current. Returns null when no row matches `where` (a condition that
 * re-checks an invariant, e.g. "the period has not been renewed yet").
 */
export async function lockRow<T extends { version: number }>(tx: EntityManager, entity: EntityName<T>, where: FilterQuery<T>): Promise<T | null> {
  const changed = await tx.nativeUpdate(entity, where, { version: raw('version + 1') } as never);
  if (changed === 0) return null;
  return tx.findOne(entity, where, { refresh: true });
}

export const isUuid = (value: string): boolean => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
