import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { configServiceIdentifier, hooksServiceIdentifier, kernelServiceIdentifier } from '../../../kernel/tokens.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { User } from '../../identity/index.js';
import { Project, ProjectService, projectNotFound, toTreeNode, type FileTreeNode, type ProjectPermission } from '../../projects/index.js';
import { collaborationGateServiceIdentifier, type Author, type CollaborationGate } from '../collaboration-gate.js';
import { hasComments, stripComments } from '../content/comments.js';
import { contentHash } from '../content/content-hash.js';
import { applyCommands, CommandError, type CommandResult } from '../content/edit-commands.js';
import { fromMarkdownIr, toMarkdownIr } from '../content/markdown-ir.js';
import { ContentError, emptyDocument, prepareDocument, prepareEditedDocument, type DocumentContent } from '../content/rich-text.js';
import { serializeContent, type SerializedContent } from '../content/serialized-content.js';
import { blockDelta } from '../content/version-delta.js';
import { insertVersion, readContent, updateContent, versionHead } from './document-store.js';
import { RecentContent } from './recent-content.js';
import type { DocumentsConfig } from '../documents.config.js';
import { DocumentVersion, type VersionSource } from '../entities/document-version.entity.js';
import { Document } from '../entities/document.entity.js';
import { commentPreservationRequired, contentTooLarge, documentLocked, documentNotFound, versionConflict, writePermissionRequired } from '../errors.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements } from '../../../ports/database.js';

export type ContentFormat = 'json' | 'markdown-ir';

/** A whole-content or command edit, as the edit, smart-edit and collab edit endpoints take it. */
export interface EditRequest {
  mode: 'content' | 'commands';
  content?: unknown;
  content_format?: ContentFormat;
  commands?: unknown[];
}

export interface EditOutcome {
  content: DocumentContent;
  /** `content` serialized (canonical JSON, hash, size): computed once, reused by the write. */
  serialized: SerializedContent;
  results: CommandResult[];
  /** Whether the content differs from the current one. */
  changed: boolean;
}

export interface CommitOptions {
  author: Author;
  source: VersionSource;
  /** The hash the stored content must still have (compare-and-swap). */
  expectedHash: string;
  /** Refuse while a collaborative session holds the document (REST edits). */
  requireUnlocked: boolean;
  title?: string | null;
  /** Record a version even when the content does not change (rollback). */
  forceVersion?: boolean;
  /** `content` serialized already (by `computeEdit`); computed here otherwise. */
  serialized?: SerializedContent;
}

/** A version is stored as a delta only while its chain back to a snapshot stays this short. */
export const MAX_DELTA_CHAIN = 64;

export const authorOf = (principal: Principal | null): Author => ({ userId: principal?.userId ?? null, kind: principal?.kind ?? null });

/** Documents: access, content reads in JSON or markdown-ir, edits with optimistic concurrency, delete and duplicate. */
@injectable()
export class DocumentService {
  private readonly config: DocumentsConfig;
  /** Content this process wrote last, for large documents (see RecentContent). */
  private readonly recent = new RecentContent();

  constructor(
    @inject(configServiceIdentifier) config: TrellisConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(ProjectService) private readonly projects: ProjectService,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(kernelServiceIdentifier) private readonly kernel: Kernel,
    /** Runs the document write path's statements (see document-store.ts); `VersionService` uses it too. */
    @inject(preparedStatementsServiceIdentifier) readonly sql: PreparedStatements,
  ) {
    this.config = config.documents as DocumentsConfig;
  }

  /** The collab module's gate, when it is loaded. Resolved late: the gate itself uses this service. */
  get gate(): CollaborationGate | null {
    const { container } = this.kernel;
    return container.isBound(collaborationGateServiceIdentifier) ? container.get(collaborationGateServiceIdentifier) : null;
  }

  readonly newBlockId = (): string => this.ids.next();

  // ---------------------------------------------------------------------------------------------
  // Access

  /**
   * The document when the caller may read it: 404 `document_not_found` when it is missing,
   * deleted or hidden; 403 `write_permission_required` when `wanted` is write and the caller may
   * only read.
   */
  async requireDocument(
    em: EntityManager,
    documentId: string,
    principal: Principal,
    wanted: ProjectPermission = 'read',
    options: { rawContent?: boolean } = {},
  ): Promise<{ doc: Document; permissions: ReadonlySet<ProjectPermission> }> {
    // With rawContent (edits), the content comes from its own bound statement, parsed once: the
    // ORM would also keep a serialized snapshot of it for change detection.
    const found = await em.findOne(Document, { id: documentId, deletedAt: null }, (options.rawContent ? { populate: ['project'], exclude: ['content'] } : { populate: ['project'] }) as never);
    const doc = found as Document | null;
    if (!doc) throw documentNotFound();
    if (options.rawContent) {
      const stored = await readContent(this.sql, em, documentId, this.recent.head(documentId));
      if (!stored) throw documentNotFound();
      const cached = stored.content === null ? this.recent.get(documentId, stored.headVersionId, stored.contentHash) : undefined;
      if (stored.content !== null) this.recent.forget(documentId);
      // Content, hash and head always come from one read (or the cache entry of that very head).
      const current = cached ? { ...stored, content: cached.content } : stored.content !== null ? stored : await readContent(this.sql, em, documentId);
      if (!current) throw documentNotFound();
      Object.assign(doc, current);
    }
    const permissions = await this.projects.permissions(em, doc.project, principal.userId);
    if (!permissions.has('read')) throw documentNotFound();
    if (!permissions.has(wanted)) {
      if (wanted === 'write') throw writePermissionRequired();
      throw new TrellisError('forbidden', 'execute_permission_required', 'Running this document needs the execute permission in its project.');
    }
    return { doc, permissions };
  }

  /** Whether a collaborative session (in any process) holds the document now. */
  leaseActive(doc: Document): boolean {
    return doc.collabLeaseUntil !== null && doc.collabLeaseUntil.getTime() > this.clock.nowMs();
  }

  /** `collab` while a collaborative session holds the document, `rest` otherwise. */
  contentSource(doc: Document): 'collab' | 'rest' {
    // A process whose session is still closing says collab too: `rest` means no process will
    // hold or renew the lease any more (until a client connects again).
    const gate = this.gate;
    return this.leaseActive(doc) || (gate ? gate.localConnections(doc.id) > 0 || gate.holdsSession?.(doc.id) === true : false) ? 'collab' : 'rest';
  }

  // ---------------------------------------------------------------------------------------------
  // Content

  /** Parses submitted content (JSON or markdown-ir) into a stored-form document, or 400/413. */
  parseContent(input: unknown, format: ContentFormat = 'json'): DocumentContent {
    return this.parseSerialized(input, format).content;
  }

  private parseSerialized(input: unknown, format: ContentFormat = 'json'): { content: DocumentContent; serialized: SerializedContent } {
    let raw: unknown = input;
    if (format === 'markdown-ir') {
      if (typeof input !== 'string') throw new TrellisError('bad_request', 'invalid_content', 'With content_format markdown-ir, content must be a string.');
      try {
        raw = fromMarkdownIr(input);
      } catch (error) {
        throw contentError(error);
      }
    } else if (typeof input === 'string') {
      throw new TrellisError('bad_request', 'invalid_content', 'content is a string: send content_format "markdown-ir", or send the document JSON object.');
    }
    let doc: DocumentContent;
    try {
      doc = prepareDocument(raw, this.newBlockId);
    } catch (error) {
      throw contentError(error);
    }
    return { content: doc, serialized: this.serialize(doc) };
  }

  checkSize(doc: DocumentContent): void {
    this.serialize(doc);
  }

  /** The content's canonical JSON, hash and size, once; 413 `content_too_large` above `documents.maxContentBytes`. */
  serialize(doc: DocumentContent, basedOn?: DocumentContent): SerializedContent {
    // Blocks kept from cached content (an edit of a large document) are not serialized again.
    const serialized = serializeContent(doc, basedOn && this.recent.blocksOf(basedOn));
    if (serialized.bytes > this.config.maxContentBytes) throw contentTooLarge(serialized.bytes, this.config.maxContentBytes);
    return serialized;
  }

  /** The content as the caller may see it: JSON, or markdown-ir (comments dropped unless kept; always for agent tokens). */
  render(doc: Document, principal: Principal, format: ContentFormat | undefined, keepComments: boolean): DocumentContent | string {
    if (format !== 'markdown-ir') return doc.content;
    const keep = keepComments && principal.kind !== 'agent_token';
    return toMarkdownIr(keep ? doc.content : stripComments(doc.content));
  }

  /**
   * Works out an edit against `current` without saving anything: a whole replacement or the
   * commands applied in order (all or nothing: a failing command answers 400 `command_failed`).
   */
  computeEdit(current: DocumentContent, request: EditRequest, principal: Principal, currentHash?: string): EditOutcome {
    const hashOfCurrent = () => currentHash ?? contentHash(current);
    if (request.mode === 'content') {
      if (principal.kind === 'agent_token' && hasComments(current)) throw commentPreservationRequired();
      if (request.content === undefined || request.content === null) throw new TrellisError('bad_request', 'validation_failed', 'mode "content" needs content.', { details: [{ field: 'content', constraint: 'required', message: 'is required in mode content' }] });
      const { content, serialized } = this.parseSerialized(request.content, request.content_format ?? 'json');
      return { content, serialized, results: [], changed: serialized.hash !== hashOfCurrent() };
    }
    const commands = request.commands ?? [];
    if (!Array.isArray(commands) || commands.length === 0) throw new TrellisError('bad_request', 'validation_failed', 'mode "commands" needs a non-empty commands array.', { details: [{ field: 'commands', constraint: 'arrayNotEmpty', message: 'must be a non-empty array' }] });
    if (commands.length > this.config.maxCommands) throw new TrellisError('bad_request', 'too_many_commands', `At most ${this.config.maxCommands} commands per edit (documents.maxCommands).`);
    let outcome;
    try {
      outcome = applyCommands(current, commands, this.newBlockId);
    } catch (error) {
      if (error instanceof CommandError) {
        throw new TrellisError('bad_request', 'command_failed', `Command ${error.index} (${error.op || 'unknown'}) failed: ${error.message}. Nothing was saved.`, {
          extra: { command_index: error.index, op: error.op, reason: error.reason },
        });
      }
      throw error;
    }
    let content: DocumentContent;
    try {
      // Only the blocks the commands touched are checked again: the rest is stored content.
      content = outcome.changed ? prepareEditedDocument(current, outcome.doc, this.newBlockId) : current;
    } catch (error) {
      throw contentError(error);
    }
    const serialized = this.serialize(content, current);
    return { content, serialized, results: outcome.results, changed: outcome.changed && serialized.hash !== hashOfCurrent() };
  }

  /**
   * Stores new content with compare-and-swap on the stored hash (the UPDATE's WHERE clause), and a
   * version, in one transaction. Of concurrent writers with the same expected hash exactly one
   * wins; the others get 409 `version_conflict` (or 423 when a collaborative session took the
   * document meanwhile, or 404 when it was deleted).
   */
  async commit(em: EntityManager, doc: Document, content: DocumentContent, options: CommitOptions): Promise<string> {
    const serialized = options.serialized ?? serializeContent(content);
    const hash = serialized.hash;
    const now = this.clock.now();
    const title = options.title === undefined ? doc.title : options.title;
    if (hash === options.expectedHash && title === doc.title && !options.forceVersion) return hash;
    const versioned = hash !== options.expectedHash || !!options.forceVersion;
    const versionId = versioned ? this.ids.next() : doc.headVersionId;
    // A fresh fork: the transaction's flush then has no 1 MB entity to compare.
    const runner = em.isInTransaction() ? em : em.fork();
    const updated = await inTransaction(runner, async (tx) => {
      const row = await updateContent(this.sql, tx, {
        documentId: doc.id,
        expectedHash: options.expectedHash,
        content: hash !== options.expectedHash ? serialized : undefined,
        title: title !== doc.title ? title : undefined,
        headVersionId: versioned ? versionId! : undefined,
        now,
        requireUnlocked: options.requireUnlocked,
      });
      if (!row) return false;
      if (versioned) await this.storeVersion(tx, { id: versionId!, documentId: doc.id, content, serialized, title, author: options.author, source: options.source, at: now, base: doc });
      return true;
    });
    if (!updated) {
      const current = await em.fork().findOne(Document, { id: doc.id, deletedAt: null });
      if (!current) throw documentNotFound();
      if (options.requireUnlocked && this.leaseActive(current)) throw documentLocked(this.gate?.localConnections(doc.id) ?? 0);
      throw versionConflict(current);
    }
    Object.assign(doc, { content, contentHash: hash, title, updatedAt: now, headVersionId: versionId });
    if (versioned) this.recent.set(doc.id, versionId!, content, serialized);
    await this.hooks.emit('document.content_changed', { documentId: doc.id, version: hash, source: options.source, authorId: options.author.userId });
    return hash;
  }

  /**
   * Stores a version of `content` with bound statements: a delta of top-level blocks against the
   * version of `base` (the content `base` held when it was read, which is exactly its head
   * version's) when that is small and its chain short, else a snapshot.
   */
  async storeVersion(
    tx: EntityManager,
    version: { id: string; documentId: string; content: DocumentContent; serialized: SerializedContent; title: string | null; author: Author; source: VersionSource; at: Date; base?: Pick<Document, 'content' | 'contentHash' | 'headVersionId'> },
  ): Promise<void> {
    const { base, content, serialized } = version;
    let delta: { text: string; baseId: string; chainLength: number } | null = null;
    if (base?.headVersionId && base.content.content?.length && content.content?.length) {
      const head = await versionHead(this.sql, tx, base.headVersionId);
      // The head must be the content `base` holds (a head left behind by some other writer is not).
      if (head && head.contentHash === base.contentHash && head.chainLength < MAX_DELTA_CHAIN) {
        const text = blockDelta(base.content.content, content.content, serialized.blocks);
        if (text.length * 2 <= serialized.json.length) delta = { text, baseId: base.headVersionId, chainLength: head.chainLength + 1 };
      }
    }
    await insertVersion(this.sql, tx, {
      id: version.id,
      documentId: version.documentId,
      contentHash: serialized.hash,
      json: delta ? null : serialized.json,
      delta,
      title: version.title,
      source: version.source,
      authorId: version.author.userId,
      authorKind: version.author.kind,
      createdAt: version.at,
    });
  }

  /**
   * The collaborative mirror's write: compare-and-swap on `expectedHash` (no lease check: the
   * session holds the lease) and a snapshot version, in one transaction. Answers whether it matched.
   */
  async writeMirrored(em: EntityManager, documentId: string, content: DocumentContent, serialized: SerializedContent, expectedHash: string, author: Author, source: VersionSource, now: Date): Promise<boolean> {
    const versionId = this.ids.next();
    return inTransaction(em, async (tx) => {
      const row = await updateContent(this.sql, tx, { documentId, expectedHash, content: serialized, headVersionId: versionId, now, requireUnlocked: false });
      if (!row) return false;
      await this.storeVersion(tx, { id: versionId, documentId, content, serialized, title: row.title, author, source, at: now });
      return true;
    });
  }

  /** Records a snapshot version through the unit of work (creating documents); answers its id. */
  recordVersion(em: EntityManager, documentId: string, content: DocumentContent, hash: string, title: string | null, author: Author, source: VersionSource, at: Date): string {
    const id = this.ids.next();
    em.create(DocumentVersion, {
      id,
      document: em.getReference(Document, documentId),
      contentHash: hash,
      content,
      baseId: null,
      delta: null,
      chainLength: 0,
      title,
      source,
      author: author.userId ? em.getReference(User, author.userId) : null,
      authorKind: author.kind,
      createdAt: at,
    } as DocumentVersion);
    return id;
  }

  /**
   * Writes content by whichever road is open: through the live collaborative document while a
   * session holds it, else by compare-and-swap. Without `expectedHash` the write applies to
   * whatever is current (retried on a concurrent change).
   */
  async write(
    em: EntityManager,
    doc: Document,
    content: DocumentContent,
    options: { author: Author; source: VersionSource; expectedHash?: string; title?: string | null; forceVersion?: boolean; serialized?: SerializedContent },
  ): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const gate = this.gate;
      if (gate && (gate.isLive(doc.id) || this.leaseActive(doc))) {
        if (options.title !== undefined && options.title !== doc.title) await this.setTitle(em, doc, options.title);
        return gate.applyContent(doc.id, content, options.author, options.source);
      }
      try {
        return await this.commit(em, doc, content, { ...options, expectedHash: options.expectedHash ?? doc.contentHash, requireUnlocked: true });
      } catch (error) {
        const retry = error instanceof TrellisError && (error.code === 'document_locked' || (error.code === 'version_conflict' && options.expectedHash === undefined));
        if (!retry || attempt >= 3) throw error;
        const fresh = await em.fork().findOne(Document, { id: doc.id, deletedAt: null });
        if (!fresh) throw documentNotFound();
        Object.assign(doc, { content: fresh.content, contentHash: fresh.contentHash, headVersionId: fresh.headVersionId, title: fresh.title, collabLeaseUntil: fresh.collabLeaseUntil });
      }
    }
  }

  private async setTitle(em: EntityManager, doc: Document, title: string | null): Promise<void> {
    await em.nativeUpdate(Document, { id: doc.id, deletedAt: null }, { title, updatedAt: this.clock.now() });
    doc.title = title;
  }

  // ---------------------------------------------------------------------------------------------
  // Operations

  /** Creates a document in a project's file tree. */
  async create(
    em: EntityManager,
    principal: Principal,
    input: { projectId: string; title: string; content?: unknown; contentFormat?: ContentFormat; parentKey?: string; docType?: string },
  ): Promise<{ doc: Document; node: FileTreeNode }> {
    const { project } = await this.projects.requireProject(em, input.projectId, principal.userId, 'write');
    const content = input.content === undefined || input.content === null ? emptyDocument() : this.parseContent(input.content, input.contentFormat);
    const hash = contentHash(content);
    const id = this.ids.next();
    const now = this.clock.now();
    const author = authorOf(principal);
    const node = await inTransaction(em, async (tx) => {
      const created = tx.create(Document, {
        id,
        project: tx.getReference(Project, project.id),
        title: input.title,
        docType: input.docType ?? 'document',
        content,
        contentHash: hash,
        headVersionId: null,
        createdBy: tx.getReference(User, principal.userId),
        collabLeaseUntil: null,
        createdAt: now,
        updatedAt: now,
        deletedAt: null,
      } as Document);
      created.headVersionId = this.recordVersion(tx, id, content, hash, input.title, author, 'create', now);
      await tx.flush();
      return this.projects.addNode(tx, { project: tx.getReference(Project, project.id), key: id, label: input.title, type: 'file', docType: input.docType ?? 'document', parentKey: input.parentKey ?? null });
    });
    const doc = await em.findOneOrFail(Document, { id }, { populate: ['project'] });
    return { doc, node: toTreeNode(node) };
  }

  /** `POST /documents` with a `documentId`: changes the title and/or replaces the content. */
  async update(
    em: EntityManager,
    principal: Principal,
    input: { documentId: string; title?: string; content?: unknown; contentFormat?: ContentFormat; baseVersion?: string },
  ): Promise<Document> {
    const { doc } = await this.requireDocument(em, input.documentId, principal, 'write');
    if (input.content !== undefined && input.content !== null) {
      const { content, serialized } = this.computeEdit(doc.content, { mode: 'content', content: input.content, content_format: input.contentFormat }, principal, doc.contentHash);
      if (input.baseVersion !== undefined && input.baseVersion !== doc.contentHash && !(this.gate?.isLive(doc.id) || this.leaseActive(doc))) throw versionConflict(doc);
      await this.write(em, doc, content, { author: authorOf(principal), source: 'update', expectedHash: input.baseVersion, title: input.title, serialized });
    } else if (input.title !== undefined && input.title !== doc.title) {
      await this.setTitle(em, doc, input.title);
    }
    if (input.title !== undefined) await this.projects.renameNode(em, doc.project.id, doc.id, input.title);
    const fresh = await em.fork().findOneOrFail(Document, { id: doc.id }, { populate: ['project'] });
    return fresh;
  }

  /** `POST /documents/:id/edit`: the REST edit, with optimistic concurrency and the collaborative lock. */
  async edit(em: EntityManager, principal: Principal, documentId: string, request: EditRequest & { base_version: string }, source: VersionSource = 'edit'): Promise<{ version: string; results: CommandResult[] }> {
    const { doc } = await this.requireDocument(em, documentId, principal, 'write', { rawContent: true });
    const gate = this.gate;
    // Only collaborators who may write lock REST edits out (423); read-only viewers do not.
    const editors = gate?.localEditors(documentId) ?? 0;
    if (editors > 0) throw documentLocked(editors);
    if (this.leaseActive(doc)) {
      // The lease is held; when it is this process's session, held by read-only viewers only, the
      // edit goes through the live document (the viewers see it), with the same version check.
      if (!gate?.isLive(documentId)) throw documentLocked(0);
      await gate.flush(documentId);
      const current = await em.fork().findOne(Document, { id: documentId, deletedAt: null });
      if (!current) throw documentNotFound();
      if (request.base_version !== current.contentHash) throw versionConflict(current);
      const outcome = this.computeEdit(current.content, request, principal, current.contentHash);
      if (!outcome.changed) return { version: current.contentHash, results: outcome.results };
      if ((gate.localEditors(documentId) ?? 0) > 0) throw documentLocked(gate.localEditors(documentId));
      return { version: await gate.applyContent(documentId, outcome.content, authorOf(principal), source), results: outcome.results };
    }
    if (request.base_version !== doc.contentHash) throw versionConflict(doc);
    const outcome = this.computeEdit(doc.content, request, principal, doc.contentHash);
    if (!outcome.changed) return { version: doc.contentHash, results: outcome.results };
    const version = await this.commit(em, doc, outcome.content, { author: authorOf(principal), source, expectedHash: request.base_version, requireUnlocked: true, serialized: outcome.serialized });
    return { version, results: outcome.results };
  }

  /** Soft delete: sets deleted_at and removes the node (and anything below it) from the file tree. */
  async delete(em: EntityManager, principal: Principal, documentId: string): Promise<void> {
    const { doc } = await this.requireDocument(em, documentId, principal, 'write');
    const now = this.clock.now();
    const below = await inTransaction(em, async (tx) => {
      const count = await tx.nativeUpdate(Document, { id: documentId, deletedAt: null }, { deletedAt: now, collabLeaseUntil: null });
      if (count === 0) throw documentNotFound();
      const removed = await this.projects.removeSubtree(tx, doc.project.id, documentId);
      const rest = removed.filter((key) => key !== documentId);
      if (rest.length) await tx.nativeUpdate(Document, { id: { $in: rest }, deletedAt: null }, { deletedAt: now, collabLeaseUntil: null });
      return rest;
    });
    await this.gate?.closeDocument(documentId);
    // The sockets of these documents in other processes close too (4404).
    await this.hooks.emit('access.revoked', { kind: 'documents', documentIds: [documentId, ...below] });
    await this.hooks.emit('document.deleted', { documentId, projectId: doc.project.id });
  }

  /**
   * Copies a file (document) or a folder with everything below it, next to the original. The copy
   * is labelled `[Copy] label`; a label already starting with `[Copy]` becomes `[Copy-2] ...`,
   * `[Copy-2]` becomes `[Copy-3]`, and so on. JWT only; the caller must be the project owner or a
   * member of its team.
   */
  async duplicate(em: EntityManager, principal: Principal, projectId: string, nodeKey: string, nodeType: 'file' | 'folder'): Promise<FileTreeNode> {
    const project = await em.findOne(Project, { id: projectId });
    if (!project) throw projectNotFound();
    const permissions = await this.projects.permissions(em, project, principal.userId);
    if (!permissions.has('write')) throw new TrellisError('forbidden', 'project_access_denied', 'Only the project owner or a member of its team may duplicate in it.');
    const root = await this.projects.findNode(em, projectId, nodeKey);
    if (!root || root.type !== nodeType) throw new TrellisError('not_found', 'node_not_found', `No ${nodeType} "${nodeKey}" in this project's file tree (filesFolder).`);
    const subtree = await this.projects.subtree(em, projectId, nodeKey);
    const gate = this.gate;
    if (gate) for (const node of subtree) if (node.type === 'file' && gate.isLive(node.key)) await gate.flush(node.key);
    const author = authorOf(principal);
    const rootKey = await inTransaction(em, async (tx) => {
      const keys = new Map<string, string>();
      const projectRef = tx.getReference(Project, projectId);
      for (const node of subtree) {
        const isRoot = node.key === nodeKey;
        const newKey = this.ids.next();
        keys.set(node.key, newKey);
        const label = isRoot ? copyLabel(node.label) : node.label;
        if (node.type === 'file') {
          const source = await tx.findOne(Document, { id: node.key, deletedAt: null });
          if (source) {
            const now = this.clock.now();
            const title = isRoot ? copyLabel(source.title ?? node.label) : source.title;
            const hash = contentHash(source.content);
            const copy = tx.create(Document, {
              id: newKey,
              project: projectRef,
              title,
              docType: source.docType,
              content: source.content,
              contentHash: hash,
              headVersionId: null,
              createdBy: tx.getReference(User, principal.userId),
              collabLeaseUntil: null,
              createdAt: now,
              updatedAt: now,
              deletedAt: null,
            } as Document);
            copy.headVersionId = this.recordVersion(tx, newKey, source.content, hash, title, author, 'duplicate', now);
            await tx.flush();
          }
        }
        await this.projects.addNode(tx, {
          project: projectRef,
          key: newKey,
          label: label.slice(0, 500),
          type: node.type,
          docType: node.docType,
          parentKey: isRoot ? node.parentKey : keys.get(node.parentKey!)!,
          afterKey: isRoot ? node.key : undefined,
        });
      }
      return keys.get(nodeKey)!;
    });
    const tree = await this.projects.tree(em.fork(), projectId);
    const found = findInTree(tree, rootKey);
    if (!found) throw new TrellisError('internal', 'internal_error', 'The copy was saved but could not be read back.');
    return found;
  }
}

/** `label` → `[Copy] label`; `[Copy] x` → `[Copy-2] x`; `[Copy-n] x` → `[Copy-(n+1)] x`. */
export function copyLabel(label: string): string {
  const match = /^\[Copy(?:-(\d+))?\]\s?([\s\S]*)$/.exec(label);
  if (!match) return `[Copy] ${label}`;
  const n = match[1] ? Number(match[1]) + 1 : 2;
  return `[Copy-${n}] ${match[2]}`;
}

function findInTree(nodes: FileTreeNode[], key: string): FileTreeNode | undefined {
  for (const node of nodes) {
    if (node.key === key) return node;
    const inner = node.children ? findInTree(node.children, key) : undefined;
    if (inner) return inner;
  }
  return undefined;
}

function contentError(error: unknown): TrellisError {
  if (error instanceof TrellisError) return error;
  if (error instanceof ContentError) {
    return new TrellisError('bad_request', error.reason === 'invalid_markdown_ir' ? 'invalid_markdown_ir' : error.reason === 'duplicate_block_id' ? 'duplicate_block_id' : 'invalid_content', error.message, {
      details: [{ field: error.path, constraint: error.reason, message: error.message }],
    });
  }
  return new TrellisError('internal', 'internal_error', 'An internal error occurred.', { cause: error });
}

declare module '../../../kernel/hooks.js' {
  interface TrellisHooks {
    /** A document's stored content changed (any road: REST, collaborative mirror, rollback, ...). */
    'document.content_changed': { documentId: string; version: string; source: VersionSource; authorId: string | null };
    /** A document was soft-deleted. */
    'document.deleted': { documentId: string; projectId: string };
  }
}
