import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { betterSqlitePackage, sqliteDatabase, SqliteDriverNotInstalledError } from '@trellis/db-sqlite';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

// An application on the default driver must not install, or compile, better-sqlite3: the package
// that brings it is an optional peer dependency, imported only when `driver: 'better-sqlite3'`.
describe('the better-sqlite3 driver is optional', () => {
  it('is an optional peer dependency, not a dependency', () => {
    expect(Object.keys(manifest.dependencies)).not.toContain(betterSqlitePackage);
    expect(Object.keys(manifest.dependencies)).not.toContain('better-sqlite3');
    // The same MikroORM release as the default driver, and the one the install hint names.
    expect(manifest.peerDependencies[betterSqlitePackage]).toBe(manifest.dependencies['@mikro-orm/sqlite']);
    expect(new SqliteDriverNotInstalledError().message).toContain(`npm install ${betterSqlitePackage}@${manifest.dependencies['@mikro-orm/sqlite']}`);
    expect(manifest.peerDependenciesMeta?.[betterSqlitePackage]).toEqual({ optional: true });
  });

  it('is loaded by prepare() when chosen, and never for the default driver', async () => {
    const chosen = sqliteDatabase({ path: ':memory:', driver: 'better-sqlite3' });
    expect(() => chosen.ormOptions([])).toThrow('await database.prepare() first');
    await chosen.prepare!();
    expect((chosen.ormOptions([]).driver as { name: string }).name).toBe('BetterSqliteDriver');
    const standard = sqliteDatabase({ path: ':memory:' });
    await standard.prepare!();
    expect((standard.ormOptions([]).driver as { name: string }).name).toBe('SqliteDriver');
  });
});
