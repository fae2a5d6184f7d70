import { GroupCommit, SqlRunStore, type RunStoreDeps } from '@trellis/core';

/**
 * The RunStore of SQLite: core's `SqlRunStore` writing through a group commit. SQLite has one
 * writer, and with `synchronous=FULL` (the default) every commit is a sync of the WAL
 * (milliseconds), so a run's short writes, each committed alone, would be bounded by the disk
 * rather than by their work. Grouped, the writes that arrive while a commit is under way share
 * the next transaction and its one sync. The credit hold goes first, as in the portable store: a
 * transaction holds the one write lock from its first write to its commit, so where the hold goes
 * in it lengthens no lock.
 */
export class SqliteRunStore extends SqlRunStore {
  constructor(deps: RunStoreDeps) {
    super(deps, { group: new GroupCommit(deps.fork, true, deps.sql) });
  }
}
