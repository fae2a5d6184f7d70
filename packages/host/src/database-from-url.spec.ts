import { describe, expect, it } from 'vitest';
import { databaseFromUrl } from './database-from-url.js';

describe('databaseFromUrl', () => {
  it("passes on the loaded adapter's optional methods (pool state, the end of inTransaction)", async () => {
    const database = databaseFromUrl('sqlite::memory:');
    expect(database.poolStats).toBeUndefined();
    expect(database.mergeCommitted).toBeUndefined();
    await database.prepare!();
    expect(typeof database.poolStats).toBe('function');
    expect(typeof database.mergeCommitted).toBe('function');
  });
});
