import { describe, expect, it } from 'vitest';
import { AdapterNotInstalledError, importAdapter, isMissingPackage } from './adapter-packages.js';

describe('adapter packages', () => {
  it('tells a missing package apart from a missing dependency inside it', async () => {
    const missing = await import(/* @vite-ignore */ ['@trellis', 'no-such-adapter'].join('/')).catch((error: unknown) => error);
    expect(isMissingPackage(missing, '@trellis/no-such-adapter')).toBe(true);
    // The same failure does not name another package, so that one counts as installed but broken.
    expect(isMissingPackage(missing, '@trellis/db-postgres')).toBe(false);
    expect(isMissingPackage(new Error('boom'), '@trellis/db-postgres')).toBe(false);
  });

  it('imports an installed adapter package and names the package in the error for a missing one', async () => {
    const sqlite = await importAdapter('@trellis/db-sqlite', 'database.url sqlite::memory:');
    expect(typeof sqlite.sqliteDatabase).toBe('function');
    const error = new AdapterNotInstalledError('@trellis/db-postgres', 'database.url postgres://db/app');
    expect(error.message).toBe('database.url postgres://db/app needs the package @trellis/db-postgres, which is not installed. Install it next to @trellis/host: npm install @trellis/db-postgres');
    expect(error.code).toBe('adapter_not_installed');
  });
});
