import type { AnyEntity, EntityClass, EntitySchema, MikroORM, Options } from '@mikro-orm/core';

export type EntityDefinition = EntityClass<AnyEntity> | EntitySchema<any, any>;

export type Dialect = 'sqlite' | 'postgresql';

export const dialects: readonly Dialect[] = ['sqlite', 'postgresql'];

/**
 * One schema change, written once per dialect. Modules declare their migrations next to their
 * entities; the kernel runs every loaded module's migrations in name order, so names start with
 * a UTC timestamp (`20261122120000_identity`). Generate them with `pnpm migration:create`.
 */
export interface MigrationDefinition {
  name: string;
  up: Readonly<Record<Dialect, readonly string[]>>;
  down: Readonly<Record<Dialect, readonly string[]>>;
}

/** MikroORM's migration entry: a name and a class extending its `Migration`. */
export type MigrationEntry = { name: string; class: new (...args: any[]) => unknown };

/**
 * The Database port: an adapter package supplies the MikroORM driver and its options for one
 * dialect. The kernel adds the entities and migrations of the loaded modules.
 */
export interface DatabaseAdapter {
  readonly dialect: Dialect;
  /** Human-readable target, with any password removed (`sqlite:./trellis.db`). */
  readonly description: string;
  /**
   * Awaited before the first connection, so an adapter can load its driver on demand (the
   * reference host imports the adapter package named by `database.url` here).
   */
  prepare?(): Promise<void>;
  /** MikroORM options without `entities`; must include `driver` and the Migrator extension. */
  ormOptions(migrations: readonly MigrationDefinition[]): Options;
  /** Called once the ORM is up, before migrations (pragmas, extensions). */
  afterConnect?(orm: MikroORM): Promise<void>;
}

interface MigrationBase {
  addSql(sql: string): void;
}

/**
 * Turns migration definitions into MikroORM migration classes for one dialect. `base` is
 * `Migration` from `@mikro-orm/migrations`, passed in by the adapter so core stays free of it.
 */
export function toMigrationEntries(
  definitions: readonly MigrationDefinition[],
  dialect: Dialect,
  base: abstract new (...args: any[]) => MigrationBase,
): MigrationEntry[] {
  return [...definitions]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((definition) => {
      const Base = base as unknown as new (...args: any[]) => MigrationBase;
      class DefinedMigration extends Base {
        async up(): Promise<void> {
          for (const sql of definition.up[dialect]) this.addSql(sql);
        }
        async down(): Promise<void> {
          for (const sql of definition.down[dialect]) this.addSql(sql);
        }
      }
      Object.defineProperty(DefinedMigration, 'name', { value: `Migration_${definition.name}` });
      return { name: definition.name, class: DefinedMigration };
    });
}

