/**
 * The MikroORM 6 internals the Trellis SQL database adapters share: the one place (with the
 * adapters' own statement runners) that reaches past MikroORM's public API, so that an upgrade
 * that changes those internals (MikroORM 7 replaces knex with Kysely) breaks here and in the
 * adapters' `internals` tests, not in `@trellis/core`. Not meant for applications.
 */
export { mergeCommittedFork, withoutAsyncFlushContext, type EntityManagerClass, type UnitOfWorkInternals } from './unit-of-work.js';
export { knexClient, knexClientFor, knexPoolStats, type KnexClient, type PoolStats, type TarnPool } from './knex.js';
/** The releases these internals were written against and are tested with (see the adapters' `internals` tests). */
export const supportedVersions = Object.freeze({ '@mikro-orm/core': '6.6', '@mikro-orm/knex': '6.6', knex: '3', tarn: '3' });
