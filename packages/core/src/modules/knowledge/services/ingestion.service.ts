import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError } from '../../../kernel/errors.js';
import { networkGuardServiceIdentifier, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { sqlStatement, type PreparedStatements } from '../../../ports/database.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { vectorStoreServiceIdentifier, type VectorStore } from '../../../ports/vector-store.js';
import { KnowledgeBase } from '../entities/knowledge-base.entity.js';
import { KnowledgeSource, type SourceProgress, type SourceStatus } from '../entities/knowledge-source.entity.js';
import { chunkDocument } from '../ingest/chunker.js';
import { fetchUrl } from '../ingest/fetch-url.js';
import { formatOf } from '../ingest/media-types.js';
import { parseDocument } from '../ingest/parse-document.js';
import { knowledgeConfigServiceIdentifier, type KnowledgeConfig } from '../knowledge.config.js';
import { BaseEmbedders } from './base-embedders.js';
import { replaceSourceChunks } from './chunk-writer.js';

const active: SourceStatus[] = ['queued', 'parsing', 'chunking', 'embedding'];

/**
 * Whether a source has work left that no live lease holds: the poll's one read (on the index of
 * status and lease) when there is nothing to ingest, which is most polls of most hosts.
 */
const sourceWaiting = sqlStatement(
  'knowledge.source_waiting',
  `select 1 as "waiting" from "knowledge_sources" where "status" in (${active.map((status) => `'${status}'`).join(', ')}) and ("lease_until" is null or "lease_until" < ?) limit 1`,
);

/** The source was deleted (or queued again) while it was being ingested: its work is dropped. */
class SourceGone extends Error {}

const reasonOf = (error: unknown): string => {
  const text = error instanceof TrellisError ? error.message : error instanceof Error ? `${error.message}` : String(error);
  return text.length > 2000 ? `${text.slice(0, 1997)}...` : text;
};

/**
 * Ingests queued sources in the background: parse, chunk, embed, write. The sources table is the
 * job table: a process claims a source by taking its lease (a conditional update, so two processes
 * never take the same one), writes its progress at each step, and finishes it in one transaction.
 * A source whose process died keeps its step and is claimed again when the lease expires, up to
 * `ingestion.maxAttempts` times; a file that cannot be read fails with the reason in `error`.
 */
@injectable()
export class IngestionService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(vectorStoreServiceIdentifier) private readonly store: VectorStore,
    @inject(networkGuardServiceIdentifier) private readonly guard: NetworkGuard,
    @inject(BaseEmbedders) private readonly embedders: BaseEmbedders,
    @inject(knowledgeConfigServiceIdentifier) private readonly config: KnowledgeConfig,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {}

  /** Ingests queued sources one after the other until none is left or `signal` aborts. */
  async drain(em: EntityManager, log: Logger, signal: AbortSignal): Promise<number> {
    let done = 0;
    while (!signal.aborted) {
      const source = await this.claim(em.fork());
      if (!source) break;
      await this.ingest(em.fork(), source, log, signal);
      done++;
    }
    return done;
  }

  /** Takes the lease of the oldest source with work left, or answers null. */
  async claim(em: EntityManager): Promise<KnowledgeSource | null> {
    const now = new Date();
    // Nothing to do, as on most polls: one prepared read, no write and no ORM query.
    if (!(await this.sql.first(sourceWaiting, [now], em))) return null;
    const expired = { status: { $in: active }, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] };
    // Sources whose process kept dying fail for good instead of being tried forever.
    await em.nativeUpdate(
      KnowledgeSource,
      { ...expired, attempts: { $gte: this.config.ingestion.maxAttempts } },
      { status: 'failed', error: `Ingestion was interrupted ${this.config.ingestion.maxAttempts} times (the process stopped while it ingested this source).`, leaseUntil: null, updatedAt: now },
    );
    for (let tries = 0; tries < 5; tries++) {
      const candidate = await em.findOne(KnowledgeSource, expired, { orderBy: { createdAt: 'asc', id: 'asc' }, fields: ['id', 'attempts'] });
      if (!candidate) return null;
      const leaseUntil = new Date(now.getTime() + this.config.ingestion.leaseMs);
      const taken = await em.nativeUpdate(
        KnowledgeSource,
        { id: candidate.id, attempts: candidate.attempts, status: { $in: active }, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] },
        { leaseUntil, attempts: candidate.attempts + 1, updatedAt: now },
      );
      if (taken === 1) return em.fork().findOneOrFail(KnowledgeSource, { id: candidate.id }, { populate: ['data', 'base', 'base.collection'] });
    }
    return null;
  }

  private async step(em: EntityManager, source: KnowledgeSource, status: SourceStatus, progress: SourceProgress): Promise<void> {
    const leaseUntil = new Date(Date.now() + this.config.ingestion.leaseMs);
    const updated = await em.nativeUpdate(KnowledgeSource, { id: source.id, attempts: source.attempts }, { status, progress, leaseUntil, updatedAt: new Date() });
    if (updated === 0) throw new SourceGone();
  }

  /** Parses, chunks, embeds and writes one claimed source; records the outcome on the source. */
  async ingest(em: EntityManager, source: KnowledgeSource, log: Logger, signal: AbortSignal): Promise<void> {
    const base = source.base as KnowledgeBase;
    const progress: SourceProgress = { parsed: 0, chunks: 0, embedded: 0 };
    try {
      await this.step(em, source, 'parsing', progress);
      let bytes: Uint8Array = source.data ? new Uint8Array(source.data) : new Uint8Array();
      let mediaType = source.mediaType;
      if (source.kind === 'url') {
        const fetched = await fetchUrl(this.guard, source.url!, { maxBytes: this.config.maxUrlBytes, timeoutMs: this.config.urlTimeoutMs, signal });
        bytes = fetched.bytes;
        mediaType = fetched.mediaType ?? mediaType;
      }
      const format = formatOf(mediaType, source.kind === 'url' ? new URL(source.url!).pathname : source.name);
      if (!format) throw new Error(`The ${source.kind === 'url' ? 'URL answered' : 'file is'} ${mediaType || 'an unknown type'}, not a format a knowledge base reads (PDF, DOCX, HTML, Markdown, plain text, CSV).`);
      let document;
      try {
        document = await parseDocument(format, bytes);
      } catch (error) {
        throw new Error(`The ${format.toUpperCase()} file could not be read: ${reasonOf(error)}`, { cause: error });
      }
      if (!document.text.trim()) throw new Error(`No text was found in the ${format.toUpperCase()} file${format === 'pdf' ? ' (a scanned PDF needs OCR first)' : ''}.`);
      progress.parsed = document.pages.length || 1;
      await this.step(em, source, 'chunking', progress);
      const drafts = chunkDocument(document, base.chunking);
      const children = drafts.filter((draft) => draft.role === 'child');
      progress.chunks = children.length;
      await this.step(em, source, 'embedding', progress);
      const vectors: Float32Array[] = [];
      const batch = this.config.ingestion.embedBatchSize;
      for (let i = 0; i < children.length; i += batch) {
        signal.throwIfAborted();
        vectors.push(...(await this.embedders.embed(base, children.slice(i, i + batch).map((chunk) => chunk.text), signal)));
        progress.embedded = vectors.length;
        await this.step(em, source, 'embedding', progress);
      }
      await inTransaction(em, async (tx) => {
        const finished = await tx.nativeUpdate(
          KnowledgeSource,
          { id: source.id, attempts: source.attempts },
          { status: 'ready', progress, error: null, leaseUntil: null, indexedAt: new Date(), sizeBytes: bytes.length, mediaType: source.kind === 'url' ? (mediaType ?? source.mediaType).slice(0, 200) : source.mediaType, updatedAt: new Date() },
        );
        if (finished === 0) throw new SourceGone();
        await replaceSourceChunks(tx, { ids: this.ids, store: this.store }, base, source, drafts, vectors);
      });
      log.info({ sourceId: source.id, chunks: progress.chunks }, 'knowledge source ingested');
    } catch (error) {
      if (error instanceof SourceGone) return;
      if (signal.aborted) {
        // Shutting down: the lease is given back so the next process continues at once.
        await em.nativeUpdate(KnowledgeSource, { id: source.id, attempts: source.attempts }, { leaseUntil: null, attempts: source.attempts - 1 });
        return;
      }
      log.warn({ err: error, sourceId: source.id }, 'knowledge source failed');
      await em.nativeUpdate(KnowledgeSource, { id: source.id, attempts: source.attempts }, { status: 'failed', progress, error: reasonOf(error), leaseUntil: null, updatedAt: new Date() });
    }
  }
}
