import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';

/**
 * A parsed filter of the vector database's filter language (the language and its parser,
 * `parseVdbFilter`, are in the tools module: modules/tools/vdb/filter.ts). Adapters evaluate it.
 */
export type VdbScalar = string | number | boolean | null;

export interface VdbField {
  root: 'tags' | 'metadata';
  /** Keys below the root (empty for `tags`). */
  path: readonly string[];
}

export type VdbComparison = 'eq' | 'gt' | 'gte' | 'lt' | 'lte';

export type VdbFilter =
  | { op: 'and' | 'or'; items: readonly VdbFilter[] }
  | { op: 'not'; item: VdbFilter }
  | { op: 'compare'; field: VdbField; comparison: VdbComparison; value: VdbScalar }
  | { op: 'contains'; field: VdbField; value: VdbScalar }
  | { op: 'exists'; field: VdbField };

/** One record's vector and the fields a filter may look at. */
export interface VectorEntry {
  id: string;
  collectionId: string;
  vector: Float32Array;
  tags: readonly unknown[];
  metadata: Readonly<Record<string, unknown>>;
}

export interface VectorSearchRequest {
  collectionId: string;
  /** The query vector; only records of the same dimension are compared. */
  vector: Float32Array;
  /** How many hits at most. */
  limit: number;
  /** Validated filter over tags and metadata (see `parseVdbFilter`), or null for none. */
  filter: VdbFilter | null;
}

export interface VectorHit {
  id: string;
  /** Cosine distance, 0 (same direction) to 2 (opposite). */
  distance: number;
}

/**
 * Exact k-nearest-neighbour search over the vector database's records. Contract:
 * - `search` is exact and filters first: it answers the `limit` records with the smallest cosine
 *   distance among those that match the filter, and exactly `limit` hits whenever at least that
 *   many records match (never a post-filter over an approximate candidate list); ties are broken
 *   by id;
 * - `upsert` and `remove` run inside the caller's unit of work (`em`), before it commits, so a
 *   failure leaves the record unwritten; stores that read the records table itself ignore them.
 *
 * Default: `ExactScanVectorStore` (in process, any database). Adapters: `@trellis/vector-sqlite`
 * (sqlite-vec inside the SQLite database, the host's default on SQLite) and
 * `@trellis/vector-pgvector` (PostgreSQL with pgvector).
 */
export interface VectorStore {
  readonly name: string;
  /** Runs once the database is ready (load extensions, create tables). */
  start?(orm: MikroORM): Promise<void>;
  upsert(em: EntityManager, entries: readonly VectorEntry[]): Promise<void>;
  remove(em: EntityManager, collectionId: string, ids: readonly string[]): Promise<void>;
  search(em: EntityManager, request: VectorSearchRequest): Promise<VectorHit[]>;
  close?(): Promise<void>;
}

export const vectorStoreServiceIdentifier: ServiceIdentifier<VectorStore> = Symbol.for('@trellis/core/VectorStore');
