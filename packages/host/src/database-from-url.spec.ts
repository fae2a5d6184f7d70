import { describe, expect, it } from 'vitest';
import { databaseFromUrl } from './database-from-url.js';

describe('databaseFromUrl', () => {
  it("passes on the loaded adapter's optional methods (pool state, the end of inTransaction, the run store)", async () => {
    const database = databaseFromUrl('sqlite::memory:');
    expect(database.poolStats).toBeUndefined();
    expect(database.mergeCommitted).toBeUndefined();
    expect(database.runStore).toBeUndefined();
    await database.prepare!();
    expect(typeof database.poolStats).toBe('function');
    expect(typeof database.mergeCommitted).toBe('function');
    // The reference host (`trellis start`) runs on this: without it every run went through the
    // portable store (no group commit on SQLite, no one-statement hold on PostgreSQL).
    expect(typeof database.runStore).toBe('function');
  });
});
