import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { Type, type Static } from '@sinclair/typebox';
import type { Principal } from '../../../../kernel/auth/principal.js';
import { TrellisError } from '../../../../kernel/errors.js';
import { entityManagerServiceIdentifier } from '../../../../kernel/tokens.js';
import { DeploymentService } from '../../../blocks/index.js';
import { definitionsOf } from '../../block-routes.js';
import { Run } from '../../entities/run.entity.js';
import { RunService } from '../../services/run.service.js';
import { runsConfigServiceIdentifier } from '../../tokens.js';
import { attrIssue } from '../attrs.js';
import type { BlockExecutor, BlockIo, BlockOutcome } from '../executor.js';
import type { BlockKindServices } from '../kind.js';
import { defineBlockKind } from '../kind.js';
import { renderDeep } from '../template.js';
import type { WorkflowBlock } from '../workflow.js';

export const SubworkflowAttrs = Type.Object({
  /** The deployed block to run (its id, as `POST /block/{bid}/api` takes it). */
  block: Type.String({ minLength: 1, ...attrIssue('required', 'a sub-workflow block needs the id of a deployed block') }),
  /** The deployed version to run; absent: the latest when the block starts (the child run records it). */
  version: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()], attrIssue('isString', 'must be a version string'))),
  /** The child's inputs by name; strings inside are templates. */
  inputs: Type.Optional(Type.Record(Type.String(), Type.Unknown(), attrIssue('isObject', 'must be an object of inputs by name'))),
});
export type SubworkflowAttrs = Static<typeof SubworkflowAttrs>;

const failed = (code: string, message: string) => new TrellisError('bad_request', code, message);

/** The parent run as a sub-workflow block sees it: who pays, how deep, which documents run above it. */
interface Lineage {
  teamId: string;
  depth: number;
  /** The run whose budget bounds the parent (and so its children): docs/runs.md, "Budgets". */
  budgetRootId?: string;
  documents: Set<string>;
}

/**
 * Sub-workflow block: runs a deployed block (`attrs.block`, at `attrs.version` or the latest) as a
 * run of its own, with `attrs.inputs` rendered, and waits for it. The child is a stored run
 * (`parentRunId`, `parentBlockId`, `depth` set) that executes as the parent's user and bills the
 * parent's team. Its output is the child's output; a child that fails, times out or is cancelled
 * fails the block with `subworkflow_failed` (the block's failure policy then decides). The child's
 * `Idempotency-Key` is derived from the parent run, the block and the attempt, so a later attempt
 * of the parent (after its process was lost) attaches to the same child instead of starting
 * another. A cancel or timeout of the parent cancels the child.
 */
export class SubworkflowBlockExecutor implements BlockExecutor<SubworkflowAttrs> {
  readonly kind = 'subworkflow' as const;

  constructor(private readonly services: BlockKindServices) {}

  async execute(block: WorkflowBlock<SubworkflowAttrs>, io: BlockIo): Promise<BlockOutcome> {
    const em = this.services.get(entityManagerServiceIdentifier).fork();
    const runs = this.services.get(RunService);
    const maxDepth = this.services.get(runsConfigServiceIdentifier).maxSubworkflowDepth;
    const lineage = await lineageOf(em, io);
    if (lineage.depth + 1 > maxDepth) {
      throw failed('subworkflow_depth_exceeded', `Sub-workflows nest at most ${maxDepth} deep (runs.maxSubworkflowDepth); this run is at depth ${lineage.depth}.`);
    }
    if (lineage.documents.has(block.attrs.block)) {
      throw failed('subworkflow_cycle', `Block ${block.attrs.block} is already running above this one: a sub-workflow may not call itself or a workflow that calls it.`);
    }
    const principal = { kind: 'jwt', userId: io.userId, user: { id: io.userId } } as unknown as Principal;
    const target = await this.services.get(DeploymentService).resolveApiRun(em, { principal }, block.attrs.block, block.attrs.version ?? undefined);
    const inputs = renderDeep(block.attrs.inputs ?? {}, io.ctx) as Record<string, unknown>;
    // The same on every attempt of the parent (a lost one included); a retry of the block (its
    // failure policy) is another child.
    const key = `${io.path ?? block.id}#${io.iteration ?? 0}#${io.attempt ?? 1}`;
    const started = await runs.start(em, {
      userId: io.userId,
      documentId: target.documentId,
      projectId: target.projectId,
      teamId: lineage.teamId,
      content: target.content,
      inputs,
      inputDefinitions: definitionsOf(target),
      source: 'api',
      version: target.version,
      timeoutSeconds: Math.max(1, Math.min(Math.ceil(io.remainingMs() / 1000), this.services.get(runsConfigServiceIdentifier).maxTimeoutSeconds)),
      idempotency: { scope: `subworkflow:${io.runId}`, key, requestHash: createHash('sha256').update(key).digest('hex') },
      parent: { runId: io.runId, blockId: block.id, depth: lineage.depth + 1, budgetRootId: lineage.budgetRootId ?? io.runId },
      store: true,
    });
    const result = await new Promise<Awaited<ReturnType<typeof started.result>>>((resolve, reject) => {
      const onAbort = () => {
        const reason = io.signal.reason as unknown;
        // A process that stops leaves the child running: the parent's next attempt attaches to it.
        const interrupted = reason instanceof TrellisError && reason.code === 'run_interrupted';
        (interrupted ? Promise.resolve() : runs.cancelRun(started.runId)).then(() => reject(reason), () => reject(reason));
      };
      if (io.signal.aborted) return onAbort();
      io.signal.addEventListener('abort', onAbort, { once: true });
      started.result().then(
        (value) => {
          io.signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          io.signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
    if (result.status === 'completed') return { output: result.output ?? null };
    if (result.status === 'waiting' && result.waiting?.reason === 'budget' && io.waitForBudget) {
      // The child waits for a budget (its root's, this run's, or its deployment's): this run waits
      // too, and the child keeps its work. Raising the budget resumes both; this block then
      // attaches to the same child (same idempotency key) and waits for it again.
      io.waitForBudget({ question: `The sub-workflow run ${started.runId} waits for a budget: ${result.waiting.question}`, reason: 'budget', ...(result.waiting.budget ? { budget: result.waiting.budget } : {}) });
    }
    if (result.status === 'waiting') {
      await runs.cancelRun(started.runId);
      throw failed('subworkflow_failed', `The sub-workflow run ${started.runId} stopped at an ask block; sub-workflows cannot ask (it was cancelled).`);
    }
    const why = result.error ? `${result.error.code}: ${result.error.message}` : result.status;
    throw failed('subworkflow_failed', `The sub-workflow run ${started.runId} ended ${result.status} (${why}).`);
  }
}

/** The parent run's team, depth and the documents of its ancestors (a debug run has no record: depth 0). */
async function lineageOf(em: EntityManager, io: BlockIo): Promise<Lineage> {
  const documents = new Set<string>();
  let teamId = io.tenant;
  let depth = 0;
  let budgetRootId: string | undefined;
  let next: string | null = io.runId;
  for (let first = true, hops = 0; next && hops <= 64; first = false, hops++) {
    const run: Pick<Run, 'documentId' | 'teamId' | 'depth' | 'parentRunId' | 'budgetRootId'> | null = await em.findOne(Run, { id: next }, { fields: ['documentId', 'teamId', 'depth', 'parentRunId', 'budgetRootId'] });
    if (!run) break;
    if (first) {
      teamId = run.teamId ?? teamId;
      depth = run.depth ?? 0;
      budgetRootId = run.budgetRootId ?? undefined;
    }
    if (run.documentId) documents.add(run.documentId);
    next = run.parentRunId ?? null;
  }
  return { teamId, depth, documents, budgetRootId };
}

export const subworkflowKind = defineBlockKind({
  kind: 'subworkflow',
  nodeType: 'subworkflowBlock',
  attrs: SubworkflowAttrs,
  // It starts a run and waits for it: always from a checkpoint, followed by one.
  replayable: false,
  executor: (services) => new SubworkflowBlockExecutor(services),
});
