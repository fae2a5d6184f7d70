import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import type { DocumentContent } from '../../documents/index.js';
import { Block, type BlockType, type DeploymentAccess, type DeploymentInput } from './block.entity.js';

/**
 * A deployed version of a block: an immutable snapshot of its content and settings taken by
 * `POST /block/:blockId/deploy`. Runs of the deployment pinned to `version` use this content.
 */
export class BlockVersion {
  id!: string;
  block!: Block;
  version!: string;
  content!: DocumentContent;
  contentHash!: string;
  name!: string;
  description!: string;
  type!: BlockType;
  access!: DeploymentAccess;
  deployType!: string | null;
  cover!: string | null;
  inputs!: DeploymentInput[];
  deployedBy!: User | null;
  createdAt!: Date;
}

export const BlockVersionSchema = new EntitySchema<BlockVersion>({
  class: BlockVersion,
  tableName: 'block_versions',
  uniques: [{ properties: ['block', 'version'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    block: { kind: 'm:1', entity: () => Block, deleteRule: 'cascade' },
    version: { type: 'string', length: 32 },
    content: { type: 'json' },
    contentHash: { type: 'string', length: 8 },
    name: { type: 'string', length: 200 },
    description: { type: 'text', default: '' },
    type: { type: 'string', length: 32 },
    access: { type: 'string', length: 16 },
    deployType: { type: 'string', length: 64, nullable: true },
    cover: { type: 'string', length: 2000, nullable: true },
    inputs: { type: 'json' },
    deployedBy: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
