import { UniqueConstraintViolationException, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { User } from '../../identity/index.js';
import { contentHash, type DocumentContent, Document, DocumentService, copyLabel } from '../../documents/index.js';
import { Project, ProjectService, type ProjectPermission } from '../../projects/index.js';
import { Block, type BlockType, type DeploymentInput } from '../entities/block.entity.js';
import { blockAccessDenied, blockNameTaken, blockNotFound, blockNotInTrash } from '../errors.js';
import { inTransaction } from '../../../kernel/transaction.js';

/**
 * Loads a block (with its project) outside the caller's unit of work. Block services change rows
 * with conditional `nativeUpdate`s, never by flushing loaded entities; keeping the loaded block
 * out of the request's identity map means a later flush there (a document commit, a tree node)
 * cannot write stale values of it back over a concurrent change. (On SQLite, MikroORM 6.6 sees the
 * datetime fields of every loaded entity as changed, so such a flush would rewrite them.)
 */
export function loadBlock(em: EntityManager, blockId: string): Promise<Block | null> {
  return em.fork().findOne(Block, { id: blockId }, { populate: ['project'] });
}

/** The `docType` of a block's document in the file tree. */
export const BLOCK_DOC_TYPE = 'block';

export interface BlockAccess {
  block: Block;
  permissions: ReadonlySet<ProjectPermission>;
}

export interface CreateBlockInput {
  name: string;
  description?: string;
  type: BlockType;
  content?: unknown;
  parentKey?: string;
}

export interface UpdateBlockInput {
  name?: string;
  description?: string;
  content?: unknown;
  baseVersion?: string;
}

/** What a run of a block executes: resolved by `resolvePageRun` or `DeploymentService.resolveApiRun`. */
export interface BlockRunTarget {
  blockId: string;
  /** The block's document (the same id): runs are recorded against it. */
  documentId: string;
  projectId: string;
  teamId: string;
  /** `page`: the page's current content; `deployment`: a deployed version's immutable content. */
  source: 'page' | 'deployment';
  /** The deployed version run (null for a page run). */
  version: string | null;
  content: DocumentContent;
  contentHash: string;
  /** The deployment's input definitions (null for a page run, or when none were set). */
  inputs: DeploymentInput[] | null;
  /** The calling user, or null for an anonymous or deployment-token call (the run is billed to `teamId`). */
  userId: string | null;
  /** The project's owner when known (a run without a calling user executes as the owner). */
  ownerId?: string;
}

/**
 * Blocks: workflow pages of a project. A block's content is a document with the same id
 * (`docType` `block`), created, edited and versioned by the documents module; this service keeps
 * the block row (name, description, type), the trash and duplication.
 */
@injectable()
export class BlockService {
  constructor(
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(ProjectService) private readonly projects: ProjectService,
    @inject(DocumentService) private readonly documents: DocumentService,
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Access

  /**
   * The block when the caller may read its project: 404 `block_not_found` when it is missing,
   * hidden, in the trash (unless `trashed` is allowed) or not in `projectId` when given; 403
   * `block_access_denied` without the wanted permission.
   */
  async requireBlock(
    em: EntityManager,
    principal: Principal,
    blockId: string,
    options: { wanted?: ProjectPermission; projectId?: string; trashed?: boolean } = {},
  ): Promise<BlockAccess> {
    const block = await loadBlock(em, blockId);
    if (!block || (options.projectId !== undefined && block.project.id !== options.projectId)) throw blockNotFound();
    const permissions = await this.projects.permissions(em, block.project, principal.userId);
    if (!permissions.has('read')) throw blockNotFound();
    await this.reconcileTrash(em, block.project.id, [block]);
    if (block.trashedAt && !options.trashed) throw blockNotFound();
    const wanted = options.wanted ?? 'read';
    if (!permissions.has(wanted)) throw blockAccessDenied(wanted);
    return { block, permissions };
  }

  /** The block's document (its content), deleted or not. */
  async document(em: EntityManager, blockId: string): Promise<Document> {
    const doc = await em.findOne(Document, { id: blockId });
    if (!doc) throw blockNotFound();
    return doc;
  }

  /** The document with collaborative edits flushed first, so the stored content is the latest. */
  async currentDocument(em: EntityManager, blockId: string): Promise<Document> {
    const gate = this.documents.gate;
    if (gate?.isLive(blockId)) await gate.flush(blockId);
    return this.document(em.fork(), blockId);
  }

  /**
   * A block whose document was deleted through the documents API (`DELETE /documents/:id`, or a
   * folder deleted with the block in it) is moved to the trash here, so that both views agree.
   */
  async reconcileTrash(em: EntityManager, projectId: string, only?: Block[]): Promise<void> {
    const where: FilterQuery<Document> = { project: projectId, docType: BLOCK_DOC_TYPE, deletedAt: { $ne: null } };
    if (only) where.id = { $in: only.filter((b) => !b.trashedAt).map((b) => b.id) };
    if (only && only.every((b) => b.trashedAt)) return;
    const deleted = await em.find(Document, where, { fields: ['id', 'deletedAt'] } as never);
    if (!deleted.length) return;
    const untrashed = await em.fork().find(Block, { id: { $in: deleted.map((d) => d.id) }, trashedAt: null });
    for (const block of untrashed) {
      const at = deleted.find((d) => d.id === block.id)?.deletedAt ?? this.clock.now();
      await em.nativeUpdate(Block, { id: block.id, trashedAt: null }, { trashedAt: at, trashedParentKey: null });
      block.trashedAt = at;
      block.trashedParentKey = null;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** The blocks of a project outside the trash, oldest first. */
  async list(em: EntityManager, principal: Principal, projectId: string, page: Paging, where: FilterQuery<Block> = {}): Promise<{ items: Block[]; total: number }> {
    await this.projects.requireProject(em, projectId, principal.userId);
    await this.reconcileTrash(em, projectId);
    const [items, total] = await em.findAndCount(Block, { ...(where as object), project: projectId, trashedAt: null } as FilterQuery<Block>, {
      orderBy: { createdAt: 'asc', id: 'asc' },
      limit: page.size,
      offset: page.offset,
      populate: ['project'],
    });
    return { items, total };
  }

  /** The blocks in a project's trash, most recently trashed first. */
  async trash(em: EntityManager, principal: Principal, projectId: string, page: Paging): Promise<{ items: Block[]; total: number }> {
    await this.projects.requireProject(em, projectId, principal.userId);
    await this.reconcileTrash(em, projectId);
    const [items, total] = await em.findAndCount(Block, { project: projectId, trashedAt: { $ne: null } }, {
      orderBy: { trashedAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
      populate: ['project'],
    });
    return { items, total };
  }

  // ---------------------------------------------------------------------------------------------
  // Writes

  /** Creates a block: its document (in the file tree, `docType` `block`) and its row, in one transaction. */
  async create(em: EntityManager, principal: Principal, projectId: string, input: CreateBlockInput, extra: Partial<Block> = {}): Promise<Block> {
    const { project } = await this.projects.requireProject(em, projectId, principal.userId, 'write');
    const name = input.name.trim();
    await this.requireFreeName(em, project.id, name);
    let id: string;
    try {
      id = await inTransaction(em, async (tx) => {
        const { doc } = await this.documents.create(tx, principal, {
          projectId: project.id,
          title: name,
          content: input.content,
          docType: BLOCK_DOC_TYPE,
          parentKey: input.parentKey,
        });
        const now = this.clock.now();
        tx.create(Block, {
          id: doc.id,
          project: tx.getReference(Project, project.id),
          name,
          description: input.description ?? '',
          type: input.type,
          access: null,
          deployType: null,
          cover: null,
          inputs: null,
          deploymentTokenHash: null,
          latestVersion: null,
          deployedAt: null,
          installedFromBlockId: null,
          installedVersion: null,
          trashedAt: null,
          trashedParentKey: null,
          createdBy: tx.getReference(User, principal.userId),
          createdAt: now,
          updatedAt: now,
          ...extra,
        } as Block);
        await tx.flush();
        return doc.id;
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw blockNameTaken(name);
      throw error;
    }
    return em.fork().findOneOrFail(Block, { id }, { populate: ['project'] });
  }

  /** Changes name, description and/or content (the content through the documents module: hash, version, collaboration). */
  async update(em: EntityManager, principal: Principal, blockId: string, input: UpdateBlockInput): Promise<Block> {
    const { block } = await this.requireBlock(em, principal, blockId, { wanted: 'write' });
    const name = input.name?.trim();
    const renamed = name !== undefined && name !== block.name;
    if (renamed) await this.requireFreeName(em, block.project.id, name, block.id);
    if (input.content !== undefined || renamed) {
      await this.documents.update(em, principal, {
        documentId: block.id,
        title: renamed ? name : undefined,
        content: input.content,
        baseVersion: input.baseVersion,
      });
    }
    const changes: Partial<Block> = { updatedAt: this.clock.now() };
    if (renamed) changes.name = name;
    if (input.description !== undefined) changes.description = input.description;
    try {
      await em.nativeUpdate(Block, { id: block.id }, changes);
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw blockNameTaken(name!);
      throw error;
    }
    return em.fork().findOneOrFail(Block, { id: block.id }, { populate: ['project'] });
  }

  /**
   * Moves a block to the trash (its document is soft-deleted and leaves the file tree), or with
   * `confirm` deletes it for good: the block, its content, its edit history and its deployed
   * versions. Blocks installed elsewhere from its deployments keep their own copies.
   */
  async remove(em: EntityManager, principal: Principal, projectId: string, blockId: string, confirm: boolean): Promise<'trashed' | 'deleted'> {
    const { block } = await this.requireBlock(em, principal, blockId, { wanted: 'write', projectId, trashed: confirm });
    const gate = this.documents.gate;
    if (confirm) {
      await inTransaction(em, async (tx) => {
        // The block's row first: of parallel deletes, one deletes it; the others (waiting on its
        // row lock on PostgreSQL) find it gone, roll back and answer 404 like a later delete.
        if (!(await tx.nativeDelete(Block, { id: block.id }))) throw blockNotFound();
        await this.projects.removeSubtree(tx, projectId, block.id);
        await tx.nativeDelete(Document, { id: block.id });
      });
      await gate?.closeDocument(block.id);
      return 'deleted';
    }
    const node = await this.projects.findNode(em, projectId, block.id);
    const now = this.clock.now();
    const moved = await inTransaction(em, async (tx) => {
      const count = await tx.nativeUpdate(Block, { id: block.id, trashedAt: null }, { trashedAt: now, trashedParentKey: node?.parentKey ?? null });
      if (count === 0) return false;
      await tx.nativeUpdate(Document, { id: block.id }, { deletedAt: now, collabLeaseUntil: null });
      await this.projects.removeSubtree(tx, projectId, block.id);
      return true;
    });
    if (!moved) throw blockNotFound();
    await gate?.closeDocument(block.id);
    return 'trashed';
  }

  /**
   * Takes a block out of the trash: its document comes back, in the folder it was in when that
   * folder still exists (else at the top of the tree), under its old name.
   */
  async restore(em: EntityManager, principal: Principal, projectId: string, blockId: string): Promise<Block> {
    const { block } = await this.requireBlock(em, principal, blockId, { wanted: 'write', projectId, trashed: true });
    if (!block.trashedAt) throw blockNotInTrash();
    await this.restoreOne(em, block);
    return em.fork().findOneOrFail(Block, { id: block.id }, { populate: ['project'] });
  }

  /** Restores every block in the project's trash (or only `blockIds`), leaving the trash empty. */
  async restoreAll(em: EntityManager, principal: Principal, projectId: string, blockIds?: string[]): Promise<string[]> {
    await this.projects.requireProject(em, projectId, principal.userId, 'write');
    await this.reconcileTrash(em, projectId);
    const where: FilterQuery<Block> = { project: projectId, trashedAt: { $ne: null } };
    if (blockIds) where.id = { $in: blockIds };
    const trashed = await em.fork().find(Block, where, { orderBy: { trashedAt: 'asc', id: 'asc' } });
    for (const block of trashed) await this.restoreOne(em, block);
    return trashed.map((b) => b.id);
  }

  private async restoreOne(em: EntityManager, block: Block): Promise<void> {
    const projectId = block.project.id;
    // A fresh unit of work: the flush of addNode must not write back the caller's loaded (trashed) block.
    await inTransaction(em.fork(), async (tx) => {
      let parentKey = block.trashedParentKey;
      if (parentKey !== null) {
        const parent = await this.projects.findNode(tx, projectId, parentKey);
        if (!parent || parent.type !== 'folder') parentKey = null;
      }
      const count = await tx.nativeUpdate(Block, { id: block.id, trashedAt: { $ne: null } }, { trashedAt: null, trashedParentKey: null, updatedAt: this.clock.now() });
      if (count === 0) throw blockNotInTrash();
      await tx.nativeUpdate(Document, { id: block.id }, { deletedAt: null });
      if (!(await this.projects.findNode(tx, projectId, block.id))) {
        await this.projects.addNode(tx, { project: tx.getReference(Project, projectId), key: block.id, label: block.name, type: 'file', docType: BLOCK_DOC_TYPE, parentKey });
      }
    });
  }

  /**
   * Copies a block next to the original: content, description, type and deployment settings
   * (access, deployType, cover, inputs). Deployed versions and the deployment token are not
   * copied: the copy is a draft. Its name is `[Copy] name` (then `[Copy-2] name`, ...), the first
   * one free in the project.
   */
  async duplicate(em: EntityManager, principal: Principal, projectId: string, blockId: string): Promise<Block> {
    const { block } = await this.requireBlock(em, principal, blockId, { wanted: 'write', projectId });
    const doc = await this.currentDocument(em, block.id);
    const node = await this.projects.findNode(em, projectId, block.id);
    let name = copyLabel(block.name).slice(0, 200);
    for (let i = 0; (await em.count(Block, { project: projectId, name })) > 0; i++) {
      if (i > 1000) throw blockNameTaken(name);
      name = copyLabel(name).slice(0, 200);
    }
    return this.create(
      em,
      principal,
      projectId,
      { name, description: block.description, type: block.type, content: doc.content, parentKey: node?.parentKey ?? undefined },
      { access: block.access, deployType: block.deployType, cover: block.cover, inputs: block.inputs },
    );
  }

  async requireFreeName(em: EntityManager, projectId: string, name: string, exceptId?: string): Promise<void> {
    const where: FilterQuery<Block> = { project: projectId, name };
    if (exceptId) where.id = { $ne: exceptId };
    if (await em.count(Block, where)) throw blockNameTaken(name);
  }

  // ---------------------------------------------------------------------------------------------
  // Runs

  /**
   * What `POST /block/:pageId/run` executes: the page's current content (collaborative edits
   * flushed first). Needs the execute permission (403 `block_access_denied`).
   */
  async resolvePageRun(em: EntityManager, principal: Principal, pageId: string): Promise<BlockRunTarget> {
    const { block } = await this.requireBlock(em, principal, pageId, { wanted: 'execute' });
    const doc = await this.currentDocument(em, block.id);
    return {
      blockId: block.id,
      documentId: block.id,
      projectId: block.project.id,
      teamId: block.project.team.id,
      source: 'page',
      version: null,
      content: doc.content,
      contentHash: contentHash(doc.content),
      inputs: null,
      userId: principal.userId,
    };
  }
}
