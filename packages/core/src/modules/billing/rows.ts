import { LockMode, raw, type EntityManager, type EntityName, type FilterQuery } from '@mikro-orm/core';
import { dialectOf } from '../../kernel/dialect.js';
import { Team } from '../identity/index.js';
import { billingErrors } from './errors.js';

/**
 * Takes the write lock of one row inside a transaction, portably: an UPDATE that bumps the row's
 * `version` holds the row lock on PostgreSQL until the transaction ends (SQLite holds the database
 * write lock). Concurrent transactions touching the same row then run one after the other, and
 * the row read afterwards is current. Returns null when no row matches `where` (a condition that
 * re-checks an invariant, e.g. "the period has not been renewed yet").
 */
export async function lockRow<T extends { version: number }>(tx: EntityManager, entity: EntityName<T>, where: FilterQuery<T>): Promise<T | null> {
  const changed = await tx.nativeUpdate(entity, where, { version: raw('version + 1') } as never);
  if (changed === 0) return null;
  return tx.findOne(entity, where, { refresh: true });
}

/**
 * Holds a share lock on the team row until the transaction ends (PostgreSQL; SQLite has one writer
 * anyway), so a deletion of the team waits for the billing transaction or the transaction sees the
 * team gone: no deadlock between the deletion's cascade and billing's row locks. Answers 400
 * NO_TEAM when the team no longer exists.
 */
export async function lockTeam(tx: EntityManager, teamId: string): Promise<void> {
  const postgres = dialectOf(tx) === 'postgresql';
  const team = await tx.findOne(Team, { id: teamId }, { fields: ['id'], ...(postgres ? { lockMode: LockMode.PESSIMISTIC_READ } : {}) });
  if (!team) throw billingErrors.noTeam('The team no longer exists.');
}

export { isUuid } from '../../kernel/crypto.js';
