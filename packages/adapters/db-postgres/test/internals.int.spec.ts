import { fileURLToPath } from 'node:url';
import { describeAdapterInternals, installedVersion, resolvedFrom } from '@trellis/test-support';
import { describe, it } from 'vitest';
import { postgresDatabase } from '../src/index.js';

// The adapter (with @trellis/db-mikro-orm) reaches past MikroORM's public API: MikroORM's unit of
// work, knex's client and tarn pool, and `pg`'s clients. These are the releases that code was
// written for; the suite fails on any other until it is reviewed.
const adapterPackage = fileURLToPath(new URL('../package.json', import.meta.url));
const url = process.env.TRELLIS_TEST_POSTGRES_URL;

function versions() {
  const orm = resolvedFrom(adapterPackage, '@mikro-orm/postgresql');
  const knexDriver = resolvedFrom(orm, '@mikro-orm/knex');
  const knex = resolvedFrom(knexDriver, 'knex');
  return {
    '@mikro-orm/core': { installed: installedVersion(adapterPackage, '@mikro-orm/core'), supported: '6.6' },
    '@mikro-orm/postgresql': { installed: installedVersion(adapterPackage, '@mikro-orm/postgresql'), supported: '6.6' },
    '@mikro-orm/knex': { installed: installedVersion(orm, '@mikro-orm/knex'), supported: '6.6' },
    knex: { installed: installedVersion(knexDriver, 'knex'), supported: '3' },
    tarn: { installed: installedVersion(knex, 'tarn'), supported: '3' },
    // The client the statement runner drives (named and unnamed queries).
    pg: { installed: installedVersion(orm, 'pg'), supported: '8' },
  };
}

if (url) {
  describeAdapterInternals('@trellis/db-postgres', {
    adapter: () => postgresDatabase({ url, pool: { min: 1, max: 4 } }),
    versions,
  });
} else {
  describe('@trellis/db-postgres internals', () => {
    it.skip('needs TRELLIS_TEST_POSTGRES_URL', () => undefined);
  });
}
