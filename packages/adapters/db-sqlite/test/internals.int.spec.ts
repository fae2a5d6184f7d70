import { fileURLToPath } from 'node:url';
import { describeAdapterInternals, installedVersion, resolvedFrom } from '@trellis/test-support';
import { sqliteDatabase, type SqliteDriverName } from '../src/index.js';

// The adapter (with @trellis/db-mikro-orm) reaches past MikroORM's public API: MikroORM's unit of
// work, knex's client and tarn pool, and the drivers' connections. These are the releases that
// code was written for; the suite fails on any other until it is reviewed.
const adapterPackage = fileURLToPath(new URL('../package.json', import.meta.url));

function versions(driver: SqliteDriverName) {
  const ormPackage = driver === 'sqlite3' ? '@mikro-orm/sqlite' : '@mikro-orm/better-sqlite';
  const orm = resolvedFrom(adapterPackage, ormPackage);
  const knexDriver = resolvedFrom(orm, '@mikro-orm/knex');
  const knex = resolvedFrom(knexDriver, 'knex');
  return {
    '@mikro-orm/core': { installed: installedVersion(adapterPackage, '@mikro-orm/core'), supported: '6.6' },
    [ormPackage]: { installed: installedVersion(adapterPackage, ormPackage), supported: '6.6' },
    '@mikro-orm/knex': { installed: installedVersion(orm, '@mikro-orm/knex'), supported: '6.6' },
    knex: { installed: installedVersion(knexDriver, 'knex'), supported: '3' },
    tarn: { installed: installedVersion(knex, 'tarn'), supported: '3' },
    // The connection the statement runner drives (its prepare/all/run).
    [driver]: { installed: installedVersion(orm, driver), supported: driver === 'sqlite3' ? '5' : '11' },
  };
}

for (const driver of ['sqlite3', 'better-sqlite3'] as const) {
  describeAdapterInternals(`@trellis/db-sqlite with ${driver}`, {
    adapter: () => sqliteDatabase({ path: ':memory:', driver }),
    versions: () => versions(driver),
  });
}
