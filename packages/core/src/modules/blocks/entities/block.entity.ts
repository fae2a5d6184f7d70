import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';
import { Project } from '../../projects/index.js';

/** What a block is for (the `type` of the Block resource). Unknown values answer 422. */
export const blockTypes = ['workflow', 'agent', 'tool', 'api'] as const;
export type BlockType = (typeof blockTypes)[number];

/**
 * Who may call a deployed block through `POST /block/:bid/api`:
 * - `private`: callers with the execute permission in the block's project;
 * - `team`: every member of the project's team, and the owner (even when the project is private);
 * - `public`: anyone, without a credential;
 * - `token`: callers that present the block's deployment token (`X-Deployment-Token`), and
 *   callers with the execute permission.
 */
export const deploymentAccessLevels = ['private', 'team', 'public', 'token'] as const;
export type DeploymentAccess = (typeof deploymentAccessLevels)[number];

/** One input a deployed block asks its callers for (a form description for clients). */
export interface DeploymentInput {
  name: string;
  type: string;
  required: boolean;
  description?: string;
  default?: unknown;
}

/**
 * A block: a workflow page of a project. Its content lives in the `documents` table under the same
 * id (a document with `docType` `block`), so it is read, edited, versioned and edited together like
 * any document; this row adds what makes it a block: name, description, type, the trash, its
 * deployment settings and where it was installed from.
 */
export class Block {
  id!: string;
  project!: Project;
  name!: string;
  description!: string;
  type!: BlockType;
  /** Deployment settings (null until set by deploy or PUT deployment). */
  access!: DeploymentAccess | null;
  deployType!: string | null;
  cover!: string | null;
  inputs!: DeploymentInput[] | null;
  /** SHA-256 (hex) of the deployment token, when access is `token`. */
  deploymentTokenHash!: string | null;
  /** The deployment's budget in credits: what its API runs may spend together (null: none). docs/runs.md, "Budgets". */
  budgetCredits!: number | null;
  /** The newest deployed version, and when it was deployed. */
  latestVersion!: string | null;
  deployedAt!: Date | null;
  /** Set when the block was installed from another project's deployment. */
  installedFromBlockId!: string | null;
  installedVersion!: string | null;
  /** Set while the block is in the trash, with the folder it was in. */
  trashedAt!: Date | null;
  trashedParentKey!: string | null;
  createdBy!: User | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const BlockSchema = new EntitySchema<Block>({
  class: Block,
  tableName: 'blocks',
  uniques: [{ properties: ['project', 'name'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    project: { kind: 'm:1', entity: () => Project, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    description: { type: 'text', default: '' },
    type: { type: 'string', length: 32 },
    access: { type: 'string', length: 16, nullable: true },
    deployType: { type: 'string', length: 64, nullable: true },
    cover: { type: 'string', length: 2000, nullable: true },
    inputs: { type: 'json', nullable: true },
    deploymentTokenHash: { type: 'string', length: 64, nullable: true },
    budgetCredits: { type: 'integer', nullable: true },
    latestVersion: { type: 'string', length: 32, nullable: true },
    deployedAt: { type: 'datetime', nullable: true },
    installedFromBlockId: { type: 'uuid', nullable: true, index: true },
    installedVersion: { type: 'string', length: 32, nullable: true },
    trashedAt: { type: 'datetime', nullable: true },
    trashedParentKey: { type: 'string', length: 64, nullable: true },
    createdBy: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
