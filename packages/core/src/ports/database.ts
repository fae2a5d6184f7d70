import type { AnyEntity, EntityClass, EntitySchema, IMigrator, MikroORM, Options } from '@mikro-orm/core';

export type EntityDefinition = EntityClass<AnyEntity> | EntitySchema<any, any>;

export type MigrationEntry = { name: string; class: new (...args: any[]) => unknown };

export type Dialect = 'sqlite' | 'postgresql';

/**
 * The Database port: an adapter package supplies the MikroORM driver, its options and the
 * migration set for its dialect. The kernel adds the entities of the enabled modules.
 */
export interface DatabaseAdapter {
  readonly dialect: Dialect;
  /** Human-readable target, with any password removed (`sqlite:./trellis.db`). */
  readonly description: string;
  /** MikroORM options without `entities`; must include `driver` and the Migrator extension. */
  ormOptions(): Options;
  readonly migrations: readonly MigrationEntry[];
  /** Called once the ORM is up, before migrations (pragmas, extensions). */
  afterConnect?(orm: MikroORM): Promise<void>;
}

export type { IMigrator };
