import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { DatabaseAdapter, Dialect } from '../ports/database.js';

/** The database adapter of each connected ORM, by its configuration (shared by every fork and transaction of its managers). */
const adapters = new WeakMap<object, DatabaseAdapter>();

/** Records the database adapter that connected `orm` (its dialect, its unit-of-work behaviour). */
export function registerDatabase(orm: MikroORM, adapter: DatabaseAdapter): void {
  adapters.set(orm.config, adapter);
}

/** The database adapter that connected the ORM of `em`, or undefined for an ORM the kernel did not connect. */
export function databaseOf(em: EntityManager): DatabaseAdapter | undefined {
  return adapters.get(em.config);
}

/**
 * The SQL dialect of an entity manager, as its database adapter declared it (never guessed from a
 * class name). Throws for a manager of an ORM the kernel did not connect.
 */
export function dialectOf(em: EntityManager): Dialect {
  const adapter = adapters.get(em.config);
  if (!adapter) throw new Error('The dialect of this entity manager is unknown: its ORM was not connected by the kernel.');
  return adapter.dialect;
}
