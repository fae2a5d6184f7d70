import type { DatabaseAdapter } from '@trellis/core';
import { postgresDatabase } from '@trellis/db-postgres';
import { sqliteDatabase, sqliteOptionsFromUrl } from '@trellis/db-sqlite';

/** `sqlite:<path>`, `sqlite::memory:` or `postgres://...` (also `postgresql://`) to an adapter. */
export function databaseFromUrl(url: string): DatabaseAdapter {
  if (url.startsWith('sqlite:')) return sqliteDatabase(sqliteOptionsFromUrl(url));
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return postgresDatabase({ url });
  throw new Error(`Unsupported database URL "${url}": use sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/database.`);
}
