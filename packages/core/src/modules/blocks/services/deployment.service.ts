import { UniqueConstraintViolationException, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { generateOpaqueToken, safeEqual, sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { TeamMember, User } from '../../identity/index.js';
import { contentHash } from '../../documents/index.js';
import { ProjectService } from '../../projects/index.js';
import { Block, type DeploymentAccess, type DeploymentInput } from '../entities/block.entity.js';
import { BlockVersion } from '../entities/block-version.entity.js';
import { blockNotFound, blockVersionNotFound, blockVersionTaken, deploymentAccessDenied, deploymentAuthRequired, deploymentNotFound } from '../errors.js';
import { BlockService, loadBlock, type BlockRunTarget } from './block.service.js';
import { nextVersion, VERSION_PATTERN } from './versions.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { preparedStatementsServiceIdentifier } from '../../../kernel/prepared-statements.js';
import type { PreparedStatements } from '../../../ports/database.js';
import { findBlockRunRow, type BlockRunRow } from '../queries.js';

export interface DeploymentSettings {
  inputs?: DeploymentInput[];
  access?: DeploymentAccess;
  deployType?: string;
  cover?: string;
  /** Issue a new deployment token (access `token`), invalidating the old one. */
  rotateToken?: boolean;
  /** The deployment's budget (docs/runs.md, "Budgets"): absent unchanged, null none. */
  budget?: { credits: number } | null;
}

/** A deployment's budget before and after a change (the caller resumes the runs waiting for it when raised). */
export interface BudgetChange {
  before: number | null;
  after: number | null;
}

/** Who calls a deployment: a signed-in principal, a deployment token, both or neither. */
export interface DeploymentCaller {
  principal: Principal | null;
  /** The `X-Deployment-Token` header, when sent. */
  deploymentToken?: string;
  /**
   * Why a credential that was sent was set aside (a scope it lacks; `RequestContext.credentialRefusal`):
   * answered instead of 401 `authentication_required` when the deployment needs a credential.
   */
  refusal?: TrellisError | null;
}

/** The header that carries a deployment token. */
export const DEPLOYMENT_TOKEN_HEADER = 'x-deployment-token';

const TOKEN_PREFIX = 'trd_';

/** The caller of a deployment as a route sees it: its principal (auth `optional`) and the `X-Deployment-Token` header. */
export const deploymentCallerOf = (ctx: { principal: Principal | null; credentialRefusal?: TrellisError | null; headers: Readonly<Record<string, string>> }): DeploymentCaller => ({
  principal: ctx.principal,
  deploymentToken: ctx.headers[DEPLOYMENT_TOKEN_HEADER] || undefined,
  refusal: ctx.credentialRefusal ?? null,
});

/** The answer to a caller without a usable credential where the deployment needs one. */
const credentialNeeded = (caller: DeploymentCaller) => caller.refusal ?? deploymentAuthRequired();

/** Whether the caller presents the deployment token of `block`. */
const presentsToken = (caller: DeploymentCaller, block: { deploymentTokenHash: string | null }) =>
  !!caller.deploymentToken && !!block.deploymentTokenHash && safeEqual(sha256Hex(caller.deploymentToken), block.deploymentTokenHash);

/**
 * Deployments of blocks: immutable versions (`deploy`), the settings that decide who may call the
 * deployment (`setDeployment`, `authorize`), installing a version into another project, and what
 * a deployment run executes (`resolveApiRun`).
 */
/** Versions a deploy without a version tries while parallel deploys take the next free one first. */
const NEXT_VERSION_ATTEMPTS = 20;

/** A first deployment found the block deployed by a parallel request (see `setDeployment`). */
class NotFirst extends Error {}

/** Deployed versions `DeploymentService` keeps for runs. */
const VERSION_CACHE = 1_000;

@injectable()
export class DeploymentService {
  /**
   * Deployed versions by block and version, as runs read them. A version never changes once
   * deployed (and goes only with its block, which `authorize` finds first), so the copy stays
   * true; the oldest entries go once `VERSION_CACHE` are kept.
   */
  private readonly versions = new Map<string, Pick<BlockVersion, 'version' | 'content' | 'contentHash' | 'inputs'>>();
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(ProjectService) private readonly projects: ProjectService,
    @inject(BlockService) private readonly blocks: BlockService,
    @inject(preparedStatementsServiceIdentifier) private readonly sql: PreparedStatements,
  ) {}

  /** The next free version of a block (`1` before the first deploy). */
  async nextVersion(em: EntityManager, principal: Principal, blockId: string): Promise<{ block: Block; version: string }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId);
    return { block, version: await this.next(em, block.id) };
  }

  async next(em: EntityManager, blockId: string): Promise<string> {
    const versions = await em.find(BlockVersion, { block: blockId }, { fields: ['version'] } as never);
    return nextVersion(versions.map((v) => v.version));
  }

  /**
   * Publishes the block's current content as an immutable version (`version`, or the next free
   * one), with its settings and `access`. Needs the write permission. A version that exists
   * answers 409 `block_version_exists`; a malformed one 422 `invalid_version`. When access becomes
   * `token` and the block has no token yet, one is issued and answered once (`deploymentToken`).
   */
  async deploy(
    em: EntityManager,
    principal: Principal,
    blockId: string,
    input: { access: DeploymentAccess; version?: string; budget?: { credits: number } | null },
  ): Promise<{ block: Block; version: BlockVersion; deploymentToken: string | null; budget?: BudgetChange }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    const deployed = await this.deployVersion(em, principal, block, input);
    if (input.budget === undefined) return deployed;
    return { ...deployed, budget: await this.setBudget(em, deployed.block, input.budget) };
  }

  /** Sets a deployment's budget (null: none); answers it before and after. */
  private async setBudget(em: EntityManager, block: Block, budget: { credits: number } | null): Promise<BudgetChange> {
    const before = block.budgetCredits ?? null;
    const after = budget === null ? null : budget.credits;
    await em.nativeUpdate(Block, { id: block.id }, { budgetCredits: after });
    block.budgetCredits = after;
    return { before, after };
  }

  private async deployVersion(em: EntityManager, principal: Principal, block: Block, input: { access: DeploymentAccess; version?: string }): Promise<{ block: Block; version: BlockVersion; deploymentToken: string | null }> {
    if (input.version !== undefined && !VERSION_PATTERN.test(input.version)) throw invalidVersion(input.version);
    const token = input.access === 'token' && !block.deploymentTokenHash ? generateOpaqueToken(TOKEN_PREFIX) : null;
    const settings = { access: input.access, tokenHash: token ? sha256Hex(token) : block.deploymentTokenHash };
    if (input.version !== undefined) {
      if (await em.count(BlockVersion, { block: block.id, version: input.version })) throw blockVersionTaken(input.version);
      return { ...(await this.publish(em, principal, block, input.version, settings)), deploymentToken: token };
    }
    // No version asked for: the next free one. A parallel deploy may take it first (the unique
    // version of the block refuses the second insert): the next free one after that, then.
    for (let attempt = 1; ; attempt++) {
      const version = await this.next(em, block.id);
      try {
        return { ...(await this.publish(em, principal, block, version, settings)), deploymentToken: token };
      } catch (error) {
        if (!(error instanceof TrellisError && error.code === 'block_version_exists') || attempt >= NEXT_VERSION_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Sets the deployment settings (input definitions, access, deployType, cover). On a block that
   * was never deployed this publishes its first version with these settings (the state table's
   * PUT deployment → deployed); on a deployed block it changes the settings of the deployment
   * (who may call it, how clients present it) without a new version.
   */
  async setDeployment(em: EntityManager, principal: Principal, blockId: string, settings: DeploymentSettings): Promise<{ block: Block; version: BlockVersion | null; deploymentToken: string | null; budget?: BudgetChange }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    const saved = await this.saveDeployment(em, principal, block, settings);
    if (settings.budget === undefined) return saved;
    return { ...saved, budget: await this.setBudget(em, saved.block, settings.budget) };
  }

  private async saveDeployment(em: EntityManager, principal: Principal, block: Block, settings: DeploymentSettings): Promise<{ block: Block; version: BlockVersion | null; deploymentToken: string | null }> {
    const access = settings.access ?? block.access ?? 'private';
    const token = access === 'token' && (!block.deploymentTokenHash || settings.rotateToken) ? generateOpaqueToken(TOKEN_PREFIX) : null;
    const tokenHash = token ? sha256Hex(token) : block.deploymentTokenHash;
    const changes: Partial<Block> = {
      access,
      deploymentTokenHash: tokenHash,
      updatedAt: this.clock.now(),
      ...(settings.inputs !== undefined ? { inputs: settings.inputs.map(cleanInput) } : {}),
      ...(settings.deployType !== undefined ? { deployType: settings.deployType } : {}),
      ...(settings.cover !== undefined ? { cover: settings.cover } : {}),
    };
    if (!block.latestVersion) {
      // The first deployment publishes version one with these settings, unless a parallel request
      // published first: then these settings change that deployment, as on a deployed block.
      const first = { ...block, ...changes } as Block;
      try {
        const saved = await this.publish(em, principal, first, await this.next(em, block.id), { access, tokenHash }, { first: true });
        return { ...saved, deploymentToken: token };
      } catch (error) {
        if (!(error instanceof NotFirst || (error instanceof TrellisError && error.code === 'block_version_exists'))) throw error;
      }
    }
    await em.nativeUpdate(Block, { id: block.id }, changes);
    const fresh = await em.fork().findOneOrFail(Block, { id: block.id }, { populate: ['project'] });
    return { block: fresh, version: null, deploymentToken: token };
  }

  /** Publishes `version`; with `first`, only when the block has no version yet (else `NotFirst`, nothing written). */
  private async publish(em: EntityManager, principal: Principal, block: Block, version: string, settings: { access: DeploymentAccess; tokenHash: string | null }, options: { first?: boolean } = {}): Promise<{ block: Block; version: BlockVersion }> {
    const doc = await this.blocks.currentDocument(em, block.id);
    const now = this.clock.now();
    const id = this.ids.next();
    try {
      await inTransaction(em, async (tx) => {
        tx.create(BlockVersion, {
          id,
          block: tx.getReference(Block, block.id),
          version,
          content: doc.content,
          contentHash: contentHash(doc.content),
          name: block.name,
          description: block.description,
          type: block.type,
          access: settings.access,
          deployType: block.deployType,
          cover: block.cover,
          inputs: block.inputs ?? [],
          deployedBy: tx.getReference(User, principal.userId),
          createdAt: now,
        } as BlockVersion);
        await tx.flush();
        const updated = await tx.nativeUpdate(Block, options.first ? { id: block.id, latestVersion: null } : { id: block.id }, {
          access: settings.access,
          deploymentTokenHash: settings.tokenHash,
          inputs: block.inputs,
          deployType: block.deployType,
          cover: block.cover,
          latestVersion: version,
          deployedAt: now,
          updatedAt: now,
        });
        // Another request published the first version meanwhile (PostgreSQL: once it committed, the
        // update above found the block deployed): this version goes back out.
        if (!updated) throw new NotFirst();
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw blockVersionTaken(version);
      throw error;
    }
    const fork = em.fork();
    return { block: await fork.findOneOrFail(Block, { id: block.id }, { populate: ['project'] }), version: await fork.findOneOrFail(BlockVersion, { id }) };
  }

  // ---------------------------------------------------------------------------------------------
  // Who may see and call a deployment

  /**
   * Whether a signed-in user may see a deployment (detail, versions, install it elsewhere): readers
   * of its project; members of its team when access is `team`; every signed-in user when `public`.
   */
  async canSee(em: EntityManager, block: Block, userId: string): Promise<boolean> {
    if ((await this.projects.permissions(em, block.project, userId)).has('read')) return true;
    if (block.access === 'public') return true;
    if (block.access === 'team') return this.inTeam(em, block, userId);
    return false;
  }

  private async inTeam(em: EntityManager, block: Block, userId: string): Promise<boolean> {
    return block.project.owner.id === userId || (await em.count(TeamMember, { team: block.project.team.id, user: userId })) > 0;
  }

  /**
   * The deployment access check of `POST /block/:bid/api`. Answers the deployed block, or throws.
   * A caller learns that a deployment exists only when it may see it: a signed-in caller who may
   * not gets the 404 of a missing block, whatever the access.
   *
   * | access | who may call | a signed-in caller who may not | no credential |
   * |---|---|---|---|
   * | `private` | the execute permission in the project | 403 if they read the project, else 404 | 401 |
   * | `team` | the owner and members of the project's team | 403 if they read the project, else 404 | 401 |
   * | `public` | anyone, with or without a credential | (none) | (runs) |
   * | `token` | whoever presents the deployment token; and the execute permission | 403 if they read the project, else 404 | 401 |
   *
   * 404 `block_not_found` for a missing or trashed block, 404 `deployment_not_found` for one never
   * deployed (to those who may see it). "401" is `authentication_required`, or the caller's
   * `refusal` (403 `insufficient_scope`) when a credential was sent and set aside.
   */
  async authorize(em: EntityManager, caller: DeploymentCaller, blockId: string): Promise<Block> {
    const block = await loadBlock(em, blockId);
    if (!block) throw blockNotFound();
    await this.blocks.reconcileTrash(em, block.project.id, [block]);
    const userId = caller.principal?.userId ?? null;
    const permissions = userId ? await this.projects.permissions(em, block.project, userId) : new Set<string>();
    const admitted =
      block.access === 'public' ||
      (block.access === 'token' && presentsToken(caller, block)) ||
      (block.access === 'team' && userId !== null && (await this.inTeam(em, block, userId)));
    const visible = permissions.has('read') || admitted;
    if (block.trashedAt) throw blockNotFound();
    if (!visible) throw userId === null ? credentialNeeded(caller) : blockNotFound();
    if (!block.latestVersion || !block.access) throw deploymentNotFound();
    if (permissions.has('execute') || admitted) return block;
    if (userId === null) throw credentialNeeded(caller);
    throw deploymentAccessDenied();
  }

  /**
   * What `POST /block/:bid/api` executes: the content of `version` (default: the latest deployed
   * version), after the access check. 404 `block_version_not_found` for a version never deployed.
   */
  async resolveApiRun(em: EntityManager, caller: DeploymentCaller, blockId: string, version?: string): Promise<BlockRunTarget> {
    const block = (caller.principal ? null : await this.authorizeAnonymous(caller, blockId)) ?? runRowOf(await this.authorize(em, caller, blockId));
    const key = `${block.id}\u0000${version ?? block.latestVersion}`;
    let pinned = this.versions.get(key);
    if (!pinned) {
      const found = await this.version(em, block, version);
      pinned = { version: found.version, content: found.content, contentHash: found.contentHash, inputs: found.inputs };
      if (this.versions.size >= VERSION_CACHE) this.versions.delete(this.versions.keys().next().value!);
      this.versions.set(key, pinned);
    }
    return {
      blockId: block.id,
      documentId: block.id,
      projectId: block.projectId,
      teamId: block.teamId,
      source: 'deployment',
      version: pinned.version,
      content: pinned.content,
      contentHash: pinned.contentHash,
      inputs: block.inputs ?? pinned.inputs,
      userId: caller.principal?.userId ?? null,
      ownerId: block.ownerId,
    };
  }

  /**
   * `authorize` for a caller without a credential (a public deployment, or a deployment token),
   * from one prepared read instead of the ORM's two; the same answers and errors. Null when the
   * block's document was deleted but the block is not in the trash yet: `authorize` moves it there.
   */
  private async authorizeAnonymous(caller: DeploymentCaller, blockId: string): Promise<BlockRunRow | null> {
    const block = await findBlockRunRow(this.sql, blockId);
    if (!block) throw blockNotFound();
    if (block.documentDeleted && !block.trashedAt) return null;
    if (block.trashedAt) throw blockNotFound();
    const admitted = block.access === 'public' || (block.access === 'token' && presentsToken(caller, block));
    if (!admitted) throw credentialNeeded(caller);
    if (!block.latestVersion) throw deploymentNotFound();
    return block;
  }

  /** A deployed version of a block (`version`, or the latest). */
  async version(em: EntityManager, block: Pick<Block, 'id' | 'latestVersion'>, version?: string): Promise<BlockVersion> {
    if (!block.latestVersion) throw deploymentNotFound();
    const wanted = version ?? block.latestVersion;
    const found = await em.findOne(BlockVersion, { block: block.id, version: wanted });
    if (!found) throw blockVersionNotFound(wanted);
    return found;
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** A deployed block the caller may see (404 `block_not_found` / `deployment_not_found` otherwise). */
  async requireDeployment(em: EntityManager, principal: Principal, blockId: string): Promise<Block> {
    const block = await loadBlock(em, blockId);
    if (!block) throw blockNotFound();
    await this.blocks.reconcileTrash(em, block.project.id, [block]);
    if (block.trashedAt || !(await this.canSee(em, block, principal.userId))) throw blockNotFound();
    if (!block.latestVersion) throw deploymentNotFound();
    return block;
  }

  /** The deployment of a block with one of its versions (`version`, or the latest) and the list of versions. */
  async detail(em: EntityManager, principal: Principal, blockId: string, version?: string): Promise<{ block: Block; version: BlockVersion; versions: string[] }> {
    const block = await this.requireDeployment(em, principal, blockId);
    const pinned = await this.version(em, block, version);
    const all = await em.find(BlockVersion, { block: block.id }, { fields: ['version', 'createdAt'], orderBy: { createdAt: 'desc', id: 'desc' } } as never);
    return { block, version: pinned, versions: all.map((v) => v.version) };
  }

  /** The deployed versions of a block, newest first (the block's version history). */
  async history(em: EntityManager, principal: Principal, projectId: string, blockId: string, page: Paging): Promise<{ block: Block; items: BlockVersion[]; total: number }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { projectId, trashed: true });
    const [items, total] = await em.findAndCount(BlockVersion, { block: block.id }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset, exclude: ['content'] } as never);
    return { block, items, total };
  }

  /** The deployed blocks of a project (outside the trash), most recently deployed first. */
  async projectDeployments(em: EntityManager, principal: Principal, projectId: string, page: Paging, where: FilterQuery<Block> = {}): Promise<{ items: Block[]; total: number }> {
    await this.projects.requireProject(em, projectId, principal.userId);
    await this.blocks.reconcileTrash(em, projectId);
    const [items, total] = await em.findAndCount(
      Block,
      { ...(where as object), project: projectId, trashedAt: null, latestVersion: { $ne: null } } as FilterQuery<Block>,
      { orderBy: { deployedAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset, populate: ['project'] },
    );
    return { items, total };
  }

  /**
   * Installs a deployed block into another project: a new block (a draft page of its own) with the
   * content and settings of the chosen version (default: the latest), remembering where it came
   * from (`installedFrom`: block and version). Needs write in the target project and sight of the
   * deployment. The name is the deployment's unless `name` is given; a taken name answers 409.
   */
  async install(em: EntityManager, principal: Principal, projectId: string, blockId: string, input: { version?: string; name?: string }): Promise<Block> {
    const { project } = await this.projects.requireProject(em, projectId, principal.userId, 'write');
    const source = await this.requireDeployment(em, principal, blockId);
    const pinned = await this.version(em, source, input.version);
    return this.blocks.create(
      em,
      principal,
      project.id,
      { name: input.name ?? pinned.name, description: pinned.description, type: pinned.type, content: pinned.content },
      { installedFromBlockId: source.id, installedVersion: pinned.version, inputs: pinned.inputs.length ? pinned.inputs : null, deployType: pinned.deployType, cover: pinned.cover },
    );
  }
}

const invalidVersion = (version: string) =>
  new TrellisError('validation', 'invalid_version', `"${version}" is not a version: use one to three dot-separated numbers, such as 3 or 1.2.0.`, {
    details: [{ field: 'version', constraint: 'matches', message: 'must be one to three dot-separated numbers' }],
  });

const cleanInput = (input: DeploymentInput): DeploymentInput => ({
  name: input.name,
  type: input.type,
  required: input.required,
  ...(input.description !== undefined ? { description: input.description } : {}),
  ...(input.default !== undefined ? { default: input.default } : {}),
});

/** The fields of a block (with its project) a deployment run reads. */
function runRowOf(block: Block): BlockRunRow {
  return {
    id: block.id,
    projectId: block.project.id,
    teamId: block.project.team.id,
    ownerId: block.project.owner.id,
    access: block.access,
    inputs: block.inputs,
    deploymentTokenHash: block.deploymentTokenHash,
    latestVersion: block.latestVersion,
    trashedAt: block.trashedAt,
    documentDeleted: false,
  };
}
