import { sqlDate, sqlStatement, type PreparedStatements } from '../../ports/database.js';
import type { DeploymentAccess, DeploymentInput } from './entities/block.entity.js';
import { BLOCK_DOC_TYPE } from './services/block.service.js';

/**
 * The blocks module's hot-path statements (prepared once, see PreparedStatements): what
 * `POST /block/{bid}/api` needs of a block to admit a caller without a credential and run its
 * deployment, in one read (the ORM path reads the block with its project, then the block's
 * document). Everything else goes through the ORM.
 */

const runTargetById = sqlStatement(
  'blocks.run_target_by_id',
  `select "b"."id", "b"."project_id" as "projectId", "p"."team_id" as "teamId", "p"."owner_id" as "ownerId", "b"."access", "b"."inputs",
    "b"."deployment_token_hash" as "deploymentTokenHash", "b"."latest_version" as "latestVersion", "b"."trashed_at" as "trashedAt",
    "d"."deleted_at" as "documentDeletedAt"
  from "blocks" "b" join "projects" "p" on "p"."id" = "b"."project_id"
  left join "documents" "d" on "d"."id" = "b"."id" and "d"."project_id" = "b"."project_id" and "d"."doc_type" = '${BLOCK_DOC_TYPE}'
  where "b"."id" = ?`,
);

/** A block as a deployment run reads it. */
export interface BlockRunRow {
  id: string;
  projectId: string;
  teamId: string;
  ownerId: string;
  access: DeploymentAccess | null;
  inputs: DeploymentInput[] | null;
  deploymentTokenHash: string | null;
  latestVersion: string | null;
  trashedAt: Date | null;
  /** The block's document was deleted through the documents API (the block goes to the trash: see `BlockService.reconcileTrash`). */
  documentDeleted: boolean;
}

export async function findBlockRunRow(sql: PreparedStatements, blockId: string): Promise<BlockRunRow | null> {
  const row = await sql.first<Record<string, unknown>>(runTargetById, [blockId]);
  if (!row) return null;
  const inputs = row['inputs'];
  return {
    id: row['id'] as string,
    projectId: row['projectId'] as string,
    teamId: row['teamId'] as string,
    ownerId: row['ownerId'] as string,
    access: (row['access'] as DeploymentAccess | null) ?? null,
    // A json column: text on SQLite, parsed on PostgreSQL.
    inputs: inputs === null || inputs === undefined ? null : ((typeof inputs === 'string' ? JSON.parse(inputs) : inputs) as DeploymentInput[]),
    deploymentTokenHash: (row['deploymentTokenHash'] as string | null) ?? null,
    latestVersion: (row['latestVersion'] as string | null) ?? null,
    trashedAt: sqlDate(row['trashedAt']),
    documentDeleted: row['documentDeletedAt'] !== null && row['documentDeletedAt'] !== undefined,
  };
}
