import type { EntityManager } from '@mikro-orm/core';
import { type DocumentContent, Document } from '../documents/index.js';
import type { Block } from './entities/block.entity.js';
import type { BlockVersion } from './entities/block-version.entity.js';
import type { BlockVersionView, BlockView, BlockWithContentView, DeploymentDetailView, DeploymentView } from './schemas.js';

/** `draft` (never deployed), `deployed` (has a deployed version), `trashed` (in the trash). */
export type BlockStatus = 'draft' | 'deployed' | 'trashed';

export const blockStatus = (block: Block): BlockStatus => (block.trashedAt ? 'trashed' : block.latestVersion ? 'deployed' : 'draft');

export function toBlockView(block: Block, doc: { contentHash: string; content?: DocumentContent } | null): BlockView;
export function toBlockView(block: Block, doc: { contentHash: string; content?: DocumentContent } | null, withContent: true): BlockWithContentView;
export function toBlockView(block: Block, doc: { contentHash: string; content?: DocumentContent } | null, withContent = false): BlockView | BlockWithContentView {
  return {
    id: block.id,
    projectId: block.project.id,
    name: block.name,
    description: block.description,
    type: block.type,
    status: blockStatus(block),
    contentHash: doc?.contentHash ?? null,
    ...(withContent ? { content: doc?.content ?? { type: 'doc' } } : {}),
    access: block.access,
    deployType: block.deployType,
    cover: block.cover,
    inputs: block.inputs ?? [],
    budget: block.budgetCredits === null || block.budgetCredits === undefined ? null : { credits: block.budgetCredits },
    version: block.latestVersion,
    deployedAt: block.deployedAt?.toISOString() ?? null,
    installedFrom: block.installedFromBlockId && block.installedVersion ? { blockId: block.installedFromBlockId, version: block.installedVersion } : null,
    trashedAt: block.trashedAt?.toISOString() ?? null,
    createdAt: block.createdAt.toISOString(),
    updatedAt: block.updatedAt.toISOString(),
  };
}

/** Block views of a page of blocks, with their content hashes (one query). */
export async function toBlockViews(em: EntityManager, blocks: Block[]): Promise<BlockView[]> {
  const docs = blocks.length ? await em.find(Document, { id: { $in: blocks.map((b) => b.id) } }, { fields: ['id', 'contentHash'] } as never) : [];
  const hashes = new Map(docs.map((d) => [d.id, d]));
  return blocks.map((block) => toBlockView(block, hashes.get(block.id) ?? null));
}

export const toBlockVersionView = (version: BlockVersion): BlockVersionView => ({
  id: version.id,
  blockId: version.block.id,
  version: version.version,
  contentHash: version.contentHash,
  name: version.name,
  description: version.description,
  type: version.type,
  access: version.access,
  deployType: version.deployType,
  cover: version.cover,
  inputs: version.inputs,
  deployedBy: version.deployedBy?.id ?? null,
  createdAt: version.createdAt.toISOString(),
  updatedAt: version.createdAt.toISOString(),
});

/** A block's deployment (current settings, latest version). */
export const toDeploymentView = (block: Block): DeploymentView => ({
  id: block.id,
  blockId: block.id,
  projectId: block.project.id,
  name: block.name,
  description: block.description,
  type: block.type,
  access: block.access!,
  deployType: block.deployType,
  cover: block.cover,
  inputs: block.inputs ?? [],
  latestVersion: block.latestVersion!,
  deployedAt: block.deployedAt!.toISOString(),
  createdAt: block.createdAt.toISOString(),
  updatedAt: block.updatedAt.toISOString(),
});

/** The deployment detail: the deployment with one pinned version and its content. */
export const toDeploymentDetail = (block: Block, version: BlockVersion, versions: string[]): DeploymentDetailView => ({
  ...toDeploymentView(block),
  name: version.name,
  description: version.description,
  type: version.type,
  inputs: block.inputs ?? version.inputs,
  version: version.version,
  versionDeployedAt: version.createdAt.toISOString(),
  contentHash: version.contentHash,
  content: version.content,
  versions,
});
