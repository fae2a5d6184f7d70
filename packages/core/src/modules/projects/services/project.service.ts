import { raw, UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { TeamMember, User, TeamService } from '../../identity/index.js';
import { ProjectNode, type ProjectNodeType } from '../entities/project-node.entity.js';
import { Project, type ProjectAccessLevel } from '../entities/project.entity.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { hooksServiceIdentifier } from '../../../kernel/tokens.js';
import type { Hooks } from '../../../kernel/hooks.js';
import type { FileTreeNode } from '../schemas.js';

export type { FileTreeNode };

/** What a user may do in a project. Documents follow the project they belong to. */
export type ProjectPermission = 'read' | 'write' | 'execute';

export interface CreateProjectInput {
  name: string;
  tools: string[];
  access: ProjectAccessLevel;
  template?: string;
  description?: string;
  teamId?: string;
}

export interface UpdateProjectInput {
  name?: string;
  description?: string;
  tools?: string[];
  access?: ProjectAccessLevel;
}

export interface AddNodeInput {
  project: Project;
  key: string;
  label: string;
  type: ProjectNodeType;
  docType: string;
  parentKey?: string | null;
  /** Place the node right after this sibling (default: last among its siblings). */
  afterKey?: string;
}

const everything: ReadonlySet<ProjectPermission> = new Set(['read', 'write', 'execute']);
const readOnly: ReadonlySet<ProjectPermission> = new Set(['read']);
const nothing: ReadonlySet<ProjectPermission> = new Set();

export const projectNotFound = () => new TrellisError('not_found', 'project_not_found', 'No such project, or you have no access to it.');

/** Projects, their access model and their file tree. */
@injectable()
export class ProjectService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
  ) {}

  /**
   * The projects the caller works in: the ones they own, and the non-private projects of the teams
   * they belong to, newest first. (Public projects of other teams are readable but not listed.)
   */
  async list(em: EntityManager, userId: string, page: Paging): Promise<{ items: Project[]; total: number }> {
    const teamIds = (await em.find(TeamMember, { user: userId }, { fields: ['team'] } as never)).map((m) => m.team.id);
    const where = { $or: [{ owner: userId }, ...(teamIds.length ? [{ team: { $in: teamIds }, access: { $ne: 'private' } }] : [])] };
    const [items, total] = await em.findAndCount(Project, where as never, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /**
   * Changes name, description, tools and/or access. Needs the write permission; changing `access`
   * is the owner's decision (403 `project_owner_required`). A name the team already uses answers 409.
   */
  async update(em: EntityManager, projectId: string, userId: string, input: UpdateProjectInput): Promise<{ project: Project; permissions: ReadonlySet<ProjectPermission> }> {
    const { project } = await this.requireProject(em, projectId, userId, 'write');
    if (input.access !== undefined && input.access !== project.access && project.owner.id !== userId) {
      throw new TrellisError('forbidden', 'project_owner_required', 'Only the owner of the project may change its access.');
    }
    if (input.name !== undefined) {
      const name = input.name.trim();
      if (name !== project.name && (await em.count(Project, { team: project.team.id, name, id: { $ne: project.id } }))) throw nameTaken(name);
      project.name = name;
    }
    if (input.description !== undefined) project.description = input.description;
    if (input.tools !== undefined) project.tools = [...new Set(input.tools)];
    if (input.access !== undefined) project.access = input.access;
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw nameTaken(project.name);
      throw error;
    }
    return { project, permissions: await this.permissions(em, project, userId) };
  }

  /**
   * Deletes a project with everything in it (documents, their versions, blocks, deployments, the
   * file tree): the owner only (403 `project_owner_required`). There is no undo.
   */
  async delete(em: EntityManager, projectId: string, userId: string): Promise<void> {
    const { project } = await this.requireProject(em, projectId, userId, 'write');
    if (project.owner.id !== userId) throw new TrellisError('forbidden', 'project_owner_required', 'Only the owner of the project may delete it.');
    await this.hooks.emit('project.deleting', { projectId: project.id });
    const count = await em.nativeDelete(Project, { id: project.id });
    if (count === 0) throw projectNotFound();
    await this.hooks.emit('project.deleted', { projectId: project.id });
  }

  async create(em: EntityManager, userId: string, input: CreateProjectInput): Promise<Project> {
    const membership = input.teamId ? await this.teams.requireMember(em, input.teamId, userId) : await this.teams.firstTeam(em, userId);
    if (!membership) throw new TrellisError('not_found', 'team_not_found', 'You belong to no team; create one first.');
    const name = input.name.trim();
    if (await em.count(Project, { team: membership.team.id, name })) throw nameTaken(name);
    const project = em.create(Project, {
      id: this.ids.next(),
      name,
      description: input.description ?? '',
      template: input.template ?? null,
      tools: [...new Set(input.tools)],
      access: input.access,
      owner: em.getReference(User, userId),
      team: membership.team,
    } as Project);
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw nameTaken(name);
      throw error;
    }
    return project;
  }

  /** The caller's permissions in a project. */
  async permissions(em: EntityManager, project: Project, userId: string): Promise<ReadonlySet<ProjectPermission>> {
    if (project.owner.id === userId) return everything;
    if (project.access !== 'private') {
      const member = await em.count(TeamMember, { team: project.team.id, user: userId });
      if (member) return everything;
    }
    return project.access === 'public' ? readOnly : nothing;
  }

  /**
   * The project when the caller may read it (404 `project_not_found` otherwise, so outsiders
   * cannot tell a hidden project from a missing one), and 403 `project_access_denied` when the
   * wanted permission is missing.
   */
  async requireProject(em: EntityManager, projectId: string, userId: string, wanted: ProjectPermission = 'read'): Promise<{ project: Project; permissions: ReadonlySet<ProjectPermission> }> {
    const project = await em.findOne(Project, { id: projectId });
    if (!project) throw projectNotFound();
    const permissions = await this.permissions(em, project, userId);
    if (!permissions.has('read')) throw projectNotFound();
    if (!permissions.has(wanted)) {
      throw new TrellisError('forbidden', 'project_access_denied', `You need the ${wanted} permission in this project (owner, or a member of its team).`);
    }
    return { project, permissions };
  }

  async findNode(em: EntityManager, projectId: string, key: string): Promise<ProjectNode | null> {
    return em.findOne(ProjectNode, { key, project: projectId });
  }

  /** Adds a node to the tree. The parent, when given, must be a folder of the same project. */
  async addNode(em: EntityManager, input: AddNodeInput): Promise<ProjectNode> {
    const parentKey = input.parentKey ?? null;
    if (parentKey !== null) {
      const parent = await this.findNode(em, input.project.id, parentKey);
      if (!parent) throw new TrellisError('not_found', 'node_not_found', `No node "${parentKey}" in this project's file tree.`);
      if (parent.type !== 'folder') throw new TrellisError('validation', 'parent_not_folder', `The node "${parentKey}" is a file; only folders hold other nodes.`);
    }
    let position: number;
    const after = input.afterKey ? await this.findNode(em, input.project.id, input.afterKey) : null;
    if (after && after.parentKey === parentKey) {
      position = after.position + 1;
      await em.nativeUpdate(ProjectNode, { project: input.project.id, parentKey, position: { $gte: position } }, { position: raw('position + 1') });
    } else {
      const last = await em.findOne(ProjectNode, { project: input.project.id, parentKey }, { orderBy: { position: 'desc' } });
      position = (last?.position ?? -1) + 1;
    }
    const node = em.create(ProjectNode, {
      key: input.key,
      project: input.project,
      parentKey,
      label: input.label,
      type: input.type,
      docType: input.docType,
      position,
    } as ProjectNode);
    await em.flush();
    return node;
  }

  /** The node and everything below it, parents before children, siblings in order. */
  async subtree(em: EntityManager, projectId: string, key: string): Promise<ProjectNode[]> {
    const all = await this.nodes(em, projectId);
    const root = all.find((n) => n.key === key);
    if (!root) return [];
    const byParent = groupByParent(all);
    const out: ProjectNode[] = [];
    const walk = (node: ProjectNode) => {
      out.push(node);
      for (const child of byParent.get(node.key) ?? []) walk(child);
    };
    walk(root);
    return out;
  }

  /** Removes a node and everything below it from the tree; answers the removed keys. */
  async removeSubtree(em: EntityManager, projectId: string, key: string): Promise<string[]> {
    const keys = (await this.subtree(em, projectId, key)).map((n) => n.key);
    if (keys.length) await em.nativeDelete(ProjectNode, { project: projectId, key: { $in: keys } });
    return keys;
  }

  async renameNode(em: EntityManager, projectId: string, key: string, label: string): Promise<void> {
    await em.nativeUpdate(ProjectNode, { project: projectId, key }, { label });
  }

  async nodes(em: EntityManager, projectId: string): Promise<ProjectNode[]> {
    return em.find(ProjectNode, { project: projectId }, { orderBy: { position: 'asc', createdAt: 'asc', key: 'asc' } });
  }

  /** The project's file tree (`filesFolder`). */
  async tree(em: EntityManager, projectId: string): Promise<FileTreeNode[]> {
    const byParent = groupByParent(await this.nodes(em, projectId));
    const build = (parentKey: string | null): FileTreeNode[] => (byParent.get(parentKey) ?? []).map((node) => toTreeNode(node, build(node.key)));
    return build(null);
  }
}

function groupByParent(nodes: ProjectNode[]): Map<string | null, ProjectNode[]> {
  const byParent = new Map<string | null, ProjectNode[]>();
  for (const node of nodes) {
    const list = byParent.get(node.parentKey) ?? [];
    list.push(node);
    byParent.set(node.parentKey, list);
  }
  return byParent;
}

export function toTreeNode(node: ProjectNode, children?: FileTreeNode[]): FileTreeNode {
  return {
    key: node.key,
    label: node.label,
    type: node.type,
    docType: node.docType,
    isLeaf: node.type === 'file',
    ...(node.type === 'folder' ? { children: children ?? [] } : {}),
  };
}

const nameTaken = (name: string) => new TrellisError('conflict', 'project_name_taken', `The team already has a project named "${name}".`);

declare module '../../../kernel/hooks.js' {
  interface TrellisHooks {
    /** A project is about to be deleted (its rows go with it by cascade): close what holds it open. */
    'project.deleting': { projectId: string };
    /** A project was deleted with everything in it. */
    'project.deleted': { projectId: string };
  }
}
