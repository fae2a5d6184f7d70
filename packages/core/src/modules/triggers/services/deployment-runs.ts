import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { blockNotFound, deploymentNotFound, loadBlock, DeploymentService } from '../../blocks/index.js';
import { deploymentInputDefinitions, RunService, type RunIdempotency, type StartedRun } from '../../runs/index.js';

/**
 * Starts runs of a deployment for triggers, as `POST /block/:bid/api` does for a caller without a
 * credential: the deployed version (pinned, else the latest), inputs checked against the
 * deployment's definitions, executed as the project's owner, billed to the project's team,
 * recorded with the trigger's source (`webhook`, `schedule`, `evaluation`) and its version. The trigger itself is the authorisation.
 */
@injectable()
export class DeploymentRuns {
  constructor(
    @inject(RunService) private readonly runs: RunService,
    @inject(DeploymentService) private readonly deployments: DeploymentService,
  ) {}

  async start(em: EntityManager, blockId: string, options: { source: 'webhook' | 'schedule' | 'evaluation'; inputs: Record<string, unknown>; version: string | null; idempotency?: RunIdempotency }): Promise<StartedRun> {
    const block = await loadBlock(em, blockId);
    if (!block || block.trashedAt) throw blockNotFound();
    if (!block.latestVersion) throw deploymentNotFound();
    const pinned = await this.deployments.version(em, block, options.version ?? undefined);
    return this.runs.start(em, {
      userId: block.project.owner.id,
      documentId: block.id,
      projectId: block.project.id,
      teamId: block.project.team.id,
      content: pinned.content,
      inputs: options.inputs,
      inputDefinitions: deploymentInputDefinitions(block.inputs ?? pinned.inputs),
      source: options.source,
      version: pinned.version,
      ...(options.idempotency ? { idempotency: options.idempotency } : {}),
      store: true,
    });
  }

  /** The run's handle, for a delivery that repeats one that started it. */
  attach(em: EntityManager, blockId: string, runId: string): Promise<StartedRun | null> {
    return this.runs.attach(em, blockId, runId);
  }
}
