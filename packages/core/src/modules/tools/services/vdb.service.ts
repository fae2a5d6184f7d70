import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { embedderServiceIdentifier, type Embedder } from '../../../ports/embedder.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { vectorStoreServiceIdentifier, type VectorStore } from '../../../ports/vector-store.js';
import { Team, TeamService } from '../../identity/index.js';
import { toolsConfigServiceIdentifier, type ToolsConfig } from '../config.js';
import { VdbCollection } from '../entities/vdb-collection.entity.js';
import { VdbRecord, vdbRecordTable as t } from '../entities/vdb-record.entity.js';
import { dialectOf } from '../vdb/exact-scan-vector-store.js';
import { compileVdbFilter } from '../vdb/filter-sql.js';
import type { VdbFilter } from '../vdb/filter.js';
import { bytesToVector, vectorToBytes } from '../vdb/vector-codec.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { findCollectionRef, findRecordsByIds, type VdbRecordFields } from '../vdb/queries.js';

export type VdbTag = string | number | boolean;

export interface VdbWriteInput {
  content?: string;
  tags?: VdbTag[];
  metadata?: Record<string, unknown>;
}

export interface VdbSearchHit {
  record: VdbRecordFields;
  /** Cosine similarity, 1 − distance. */
  score: number;
  distance: number;
}

const MAX_METADATA_BYTES = 65_536;
/** Texts per embedder call of a batch insert. */
const EMBED_BATCH = 256;

const collectionNotFound = (className: string) =>
  new TrellisError('not_found', 'vdb_collection_not_found', `Your team has no collection ${JSON.stringify(className)}; it is created by its first record.`);
const recordNotFound = () => new TrellisError('not_found', 'vdb_record_not_found', 'No such record in this collection.');

/**
 * The vector database: collections per team (created on the first write), records with content,
 * tags and metadata, a filter language, and exact similarity search through the VectorStore port.
 * A record and its vector are written in one transaction; deleting is irreversible.
 */
@injectable()
export class VdbService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(embedderServiceIdentifier) private readonly embedder: Embedder,
    @inject(vectorStoreServiceIdentifier) private readonly store: VectorStore,
    @inject(toolsConfigServiceIdentifier) private readonly config: ToolsConfig,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {}

  /** query.limit of a search when none is given. */
  get defaultLimit(): number {
    return this.config.vdb.defaultSearchLimit;
  }

  /** The team whose collections the caller works in: their first (personal) team. */
  async teamOf(_em: EntityManager, userId: string): Promise<string> {
    // One prepared read, never cached: a membership withdrawn is withdrawn at once, in every process.
    const teamId = await this.teams.firstTeamId(userId);
    if (!teamId) throw new TrellisError('bad_request', 'no_team', 'You belong to no team; collections belong to teams.');
    return teamId;
  }

  async findCollection(em: EntityManager, teamId: string, className: string): Promise<VdbCollection> {
    const collection = await em.findOne(VdbCollection, { team: teamId, name: className });
    if (!collection) throw collectionNotFound(className);
    return collection;
  }

  async create(em: EntityManager, teamId: string, className: string, input: VdbWriteInput & { content: string }): Promise<VdbRecord> {
    this.checkInput(input);
    const vector = await this.embedOne(input.content);
    const collection = await this.ensureCollection(em, teamId, className);
    this.checkEmbedder(collection);
    return inTransaction(em, async (tx) => {
      const record = tx.create(VdbRecord, {
        id: this.ids.next(),
        collection: tx.getReference(VdbCollection, collection.id),
        content: input.content,
        tags: input.tags ?? [],
        metadata: input.metadata ?? {},
        embedding: vectorToBytes(vector),
        dimension: vector.length,
      } as VdbRecord);
      await tx.flush();
      await this.store.upsert(tx, [{ id: record.id, collectionId: collection.id, vector, tags: record.tags, metadata: record.metadata }]);
      return record;
    });
  }

  /**
   * Adds many records at once: every content is embedded in batches of `EMBED_BATCH` texts (one
   * embedder call each), then all records and their vectors are written in one transaction with
   * multi-row inserts. All or nothing: a record that fails validation or embedding writes none.
   */
  async createMany(em: EntityManager, teamId: string, className: string, inputs: ReadonlyArray<VdbWriteInput & { content: string }>): Promise<VdbRecord[]> {
    inputs.forEach((input, index) => this.checkInput(input, `records.${index}.`));
    const vectors: Float32Array[] = [];
    for (let i = 0; i < inputs.length; i += EMBED_BATCH) vectors.push(...(await this.embedMany(inputs.slice(i, i + EMBED_BATCH).map((input) => input.content))));
    const collection = await this.ensureCollection(em, teamId, className);
    this.checkEmbedder(collection);
    const now = new Date();
    const records = inputs.map((input, index) =>
      Object.assign(new VdbRecord(), {
        id: this.ids.next(),
        collection,
        content: input.content,
        tags: input.tags ?? [],
        metadata: input.metadata ?? {},
        embedding: vectorToBytes(vectors[index]!),
        dimension: vectors[index]!.length,
        createdAt: now,
        updatedAt: now,
      }),
    );
    await inTransaction(em, async (tx) => {
      for (let i = 0; i < records.length; i += 500) {
        await tx.insertMany(VdbRecord, records.slice(i, i + 500).map((record) => ({ ...record, collection: collection.id })) as never[]);
      }
      await this.store.upsert(tx, records.map((record, index) => ({ id: record.id, collectionId: collection.id, vector: vectors[index]!, tags: record.tags, metadata: record.metadata })));
    });
    return records;
  }

  async get(em: EntityManager, teamId: string, className: string, id: string): Promise<VdbRecord> {
    const collection = await this.findCollection(em, teamId, className);
    const record = await em.findOne(VdbRecord, { id, collection: collection.id });
    if (!record) throw recordNotFound();
    return record;
  }

  /** Replaces the fields given (metadata as a whole); a new content is embedded again. */
  async update(em: EntityManager, teamId: string, className: string, id: string, input: VdbWriteInput): Promise<VdbRecord> {
    this.checkInput(input);
    const collection = await this.findCollection(em, teamId, className);
    const vector = input.content === undefined ? undefined : await this.embedOne(input.content);
    if (vector) this.checkEmbedder(collection);
    return inTransaction(em, async (tx) => {
      const record = await tx.findOne(VdbRecord, { id, collection: collection.id }, { populate: ['embedding'] });
      if (!record) throw recordNotFound();
      if (input.content !== undefined) record.content = input.content;
      if (input.tags !== undefined) record.tags = input.tags;
      if (input.metadata !== undefined) record.metadata = input.metadata;
      if (vector) {
        record.embedding = vectorToBytes(vector);
        record.dimension = vector.length;
      }
      record.updatedAt = new Date();
      await tx.flush();
      const stored = vector ?? bytesToVector(record.embedding).slice();
      await this.store.upsert(tx, [{ id: record.id, collectionId: collection.id, vector: stored, tags: record.tags, metadata: record.metadata }]);
      return record;
    });
  }

  async delete(em: EntityManager, teamId: string, className: string, id: string): Promise<void> {
    const collection = await this.findCollection(em, teamId, className);
    await inTransaction(em, async (tx) => {
      const deleted = await tx.nativeDelete(VdbRecord, { id, collection: collection.id });
      if (deleted === 0) throw recordNotFound();
      await this.store.remove(tx, collection.id, [id]);
    });
  }

  async list(em: EntityManager, teamId: string, className: string, options: { limit: number; skip: number; filter: VdbFilter | null }): Promise<{ items: VdbRecord[]; total: number }> {
    const collection = await this.findCollection(em, teamId, className);
    const dialect = dialectOf(em);
    const cast = dialect === 'postgresql' ? '::uuid' : '';
    let where = `r.${t.collection} = ?${cast}`;
    const params: unknown[] = [collection.id];
    if (options.filter) {
      const fragment = compileVdbFilter(options.filter, dialect, { columns: { tags: `r.${t.tags}`, metadata: `r.${t.metadata}` } });
      where += ` AND ${fragment.sql}`;
      params.push(...fragment.params);
    }
    const connection = em.getConnection();
    const [counted] = (await connection.execute(`SELECT COUNT(*) AS total FROM ${t.table} r WHERE ${where}`, params, 'all')) as Array<{ total: number | string }>;
    const rows = (await connection.execute(
      `SELECT r.${t.id} AS id FROM ${t.table} r WHERE ${where} ORDER BY r.created_at, r.${t.id} LIMIT ${options.limit} OFFSET ${options.skip}`,
      params,
      'all',
    )) as Array<{ id: string }>;
    const found = rows.length ? await em.find(VdbRecord, { id: rows.map((row) => row.id) }) : [];
    const byId = new Map(found.map((record) => [record.id, record]));
    return { items: rows.map((row) => byId.get(row.id)).filter((record): record is VdbRecord => record !== undefined), total: Number(counted?.total ?? 0) };
  }

  async search(em: EntityManager, teamId: string, className: string, content: string, options: { limit?: number; filter: VdbFilter | null }): Promise<VdbSearchHit[]> {
    // The collection and the hit records in prepared reads (see vdb/queries.ts).
    const collection = await findCollectionRef(this.sql, teamId, className);
    if (!collection) throw collectionNotFound(className);
    this.checkEmbedder(collection);
    const limit = options.limit ?? this.config.vdb.defaultSearchLimit;
    if (limit > this.config.vdb.maxSearchLimit) {
      throw new TrellisError('bad_request', 'invalid_query', `query.limit is at most ${this.config.vdb.maxSearchLimit}.`, {
        details: [{ field: 'query.limit', constraint: 'max', message: `at most ${this.config.vdb.maxSearchLimit}` }],
      });
    }
    const vector = await this.embedOne(content);
    let hits;
    try {
      hits = await this.store.search(em, { collectionId: collection.id, vector, limit, filter: options.filter });
    } catch (error) {
      if (error instanceof TrellisError) throw error;
      throw new TrellisError('validation', 'vdb_search_failed', `The vector store (${this.store.name}) could not search.`, { cause: error });
    }
    if (hits.length === 0) return [];
    const records = await findRecordsByIds(this.sql, collection.id, hits.map((hit) => hit.id));
    const byId = new Map(records.map((record) => [record.id, record]));
    return hits.flatMap((hit) => {
      const record = byId.get(hit.id);
      return record ? [{ record, distance: hit.distance, score: 1 - hit.distance }] : [];
    });
  }

  private async ensureCollection(em: EntityManager, teamId: string, className: string): Promise<VdbCollection> {
    const existing = await em.findOne(VdbCollection, { team: teamId, name: className });
    if (existing) return existing;
    try {
      return await inTransaction(em, async (tx) => {
        const collection = tx.create(VdbCollection, {
          id: this.ids.next(),
          team: tx.getReference(Team, teamId),
          name: className,
          embedder: this.embedder.name,
          dimension: this.embedder.dimension,
        } as VdbCollection);
        await tx.flush();
        return collection;
      });
    } catch (error) {
      // Two first writes at once: the other one created it.
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
      const created = await em.fork().findOne(VdbCollection, { team: teamId, name: className });
      if (!created) throw error;
      return created;
    }
  }

  private checkEmbedder(collection: Pick<VdbCollection, 'embedder' | 'dimension'>): void {
    if (collection.embedder !== this.embedder.name || collection.dimension !== this.embedder.dimension) {
      throw new TrellisError(
        'validation',
        'vdb_embedder_mismatch',
        `The collection was embedded with ${collection.embedder} (${collection.dimension} dimensions) but the server now embeds with ${this.embedder.name} (${this.embedder.dimension}); re-create the collection or configure the original embedder.`,
      );
    }
  }

  private async embedOne(content: string): Promise<Float32Array> {
    return (await this.embedMany([content]))[0]!;
  }

  private async embedMany(contents: readonly string[]): Promise<Float32Array[]> {
    let vectors: Float32Array[];
    try {
      vectors = await this.embedder.embed(contents);
    } catch (error) {
      if (error instanceof TrellisError && error.code === 'vdb_embedding_failed') throw error;
      const reason = error instanceof TrellisError ? ` ${error.message}` : '';
      throw new TrellisError('validation', 'vdb_embedding_failed', `The embedder (${this.embedder.name}) could not embed the content.${reason}`, { cause: error });
    }
    if (vectors.length !== contents.length || vectors.some((vector) => vector.length !== this.embedder.dimension || vector.some((x) => !Number.isFinite(x)))) {
      throw new TrellisError('validation', 'vdb_embedding_failed', `The embedder (${this.embedder.name}) answered a malformed vector.`);
    }
    return vectors;
  }

  private checkInput(input: VdbWriteInput, at = ''): void {
    if (input.content !== undefined && input.content.length > this.config.vdb.maxContentLength) {
      throw new TrellisError('validation', 'vdb_content_too_long', `content is at most ${this.config.vdb.maxContentLength} characters.`, {
        details: [{ field: `${at}content`, constraint: 'maxLength', message: `at most ${this.config.vdb.maxContentLength} characters` }],
      });
    }
    if (input.metadata !== undefined && Buffer.byteLength(JSON.stringify(input.metadata)) > MAX_METADATA_BYTES) {
      throw new TrellisError('validation', 'vdb_metadata_too_large', `metadata is at most ${MAX_METADATA_BYTES} bytes of JSON.`, {
        details: [{ field: `${at}metadata`, constraint: 'maxSize', message: `at most ${MAX_METADATA_BYTES} bytes` }],
      });
    }
  }
}
