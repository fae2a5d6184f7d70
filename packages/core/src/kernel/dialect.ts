import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { Dialect } from '../ports/database.js';

/** The dialect of each connected ORM, by its configuration (shared by every fork and transaction of its managers). */
const dialects = new WeakMap<object, Dialect>();

/** Records the dialect the database adapter declared (`DatabaseAdapter.dialect`) for the ORM it connected. */
export function registerDialect(orm: MikroORM, dialect: Dialect): void {
  dialects.set(orm.config, dialect);
}

/**
 * The SQL dialect of an entity manager, as its database adapter declared it (never guessed from a
 * class name). Throws for a manager of an ORM the kernel did not connect.
 */
export function dialectOf(em: EntityManager): Dialect {
  const dialect = dialects.get(em.config);
  if (!dialect) throw new Error('The dialect of this entity manager is unknown: its ORM was not connected by the kernel.');
  return dialect;
}
