import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../../kernel/auth/principal.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { BidParams, PageParams, blockAuth, BlockService, type BlockRunTarget, deploymentCallerOf, DeploymentService } from '../blocks/index.js';
import { TeamService } from '../identity/index.js';
import { Project, ProjectService } from '../projects/index.js';
import { deploymentInputDefinitions, type InputDefinition } from './blocks/inputs.js';
import { BlockApiBody, BlockRunBody, BlockTestBody } from './dto/block-run.dto.js';
import { runErrors } from './errors.js';
import { runReply, runResponseSpec, startReply, startResponseSpec } from './routes.js';
import { idempotencyOf, RunService } from './services/run.service.js';
import { budgetOf } from './services/run-starter.js';
import { sha256Hex } from '../../kernel/crypto.js';

const tags = ['Blocks'];
const runErrorsDoc = {
  400: 'Inputs fail the input definitions (invalid_inputs, with details); content is not document JSON (invalid_content); a block cannot run (invalid_workflow); timeout above the maximum (timeout_too_large); no team to bill (no_team_associated); malformed Idempotency-Key (invalid_idempotency_key, Block API)',
  402: 'Too few credits (insufficient_credits, with balance, required and shortfall)',
  500: 'The credit balance could not be checked (balance_check_failed)',
};

/** The deployment's input definitions in the runtime's terms (an unknown type is not checked). */
export const definitionsOf = (target: BlockRunTarget): InputDefinition[] | undefined => deploymentInputDefinitions(target.inputs);

/** The user a deployment run executes as: the caller, or (anonymous or token callers) the project's owner. */
export async function runAs(em: EntityManager, target: BlockRunTarget): Promise<string> {
  if (target.userId) return target.userId;
  if (target.ownerId) return target.ownerId;
  const project = await em.findOneOrFail(Project, { id: target.projectId });
  return project.owner.id;
}

async function teamForTest(em: EntityManager, ctx: { get: <T>(id: new (...args: any[]) => T) => T }, principal: Principal, projectId?: string): Promise<{ teamId: string | null; projectId: string | null }> {
  if (projectId) {
    const { project } = await ctx.get(ProjectService).requireProject(em, projectId, principal.userId, 'execute');
    return { teamId: project.team.id, projectId: project.id };
  }
  const membership = await ctx.get(TeamService).firstTeam(em, principal.userId);
  return { teamId: membership?.team.id ?? null, projectId: null };
}

/**
 * The Block API's three run endpoints. A block is a workflow page stored as a document with the
 * same id, so its runs are document runs: recorded against the block's id, listed by
 * `GET /documents/:id/runs`, reconnected to with `GET /documents/:id/runs/:runId/events`.
 */
export function blockRunRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/block/:pageId/run',
      summary: 'Run a block page (its current content)',
      description: 'Needs the execute permission in the block\'s project. Same events and answers as `POST /documents/{documentId}/run` (docs/runs.md).',
      tags,
      auth: blockAuth,
      params: PageParams,
      body: BlockRunBody,
      response: runResponseSpec,
      errors: { ...runErrorsDoc, 403: 'No execute permission (block_access_denied)', 404: 'No such block, or in the trash (block_not_found)' },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        const target = await ctx.get(BlockService).resolvePageRun(ctx.em, principal, ctx.params.pageId);
        const started = await ctx.get(RunService).start(ctx.em, {
          userId: principal.userId,
          documentId: target.documentId,
          projectId: target.projectId,
          teamId: target.teamId,
          content: target.content,
          inputs: ctx.body.inputs,
          source: 'block',
          timeoutSeconds: ctx.body.timeout,
          budget: budgetOf(ctx.body.budget),
          onError: ctx.body.onError,
          store: true,
        });
        return runReply(started, ctx.body);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/block/test',
      summary: 'Test-run inline content (nothing stored)',
      description: 'Runs `content` with `inputs` in this process; the events stream on the response only. Credits come from the team of `projectId` (execute permission), else your first team.',
      tags,
      auth: blockAuth,
      body: BlockTestBody,
      response: runResponseSpec,
      errors: { ...runErrorsDoc, 403: 'No execute permission in projectId (project_access_denied)', 404: 'No such project (project_not_found)' },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        const billing = await teamForTest(ctx.em, ctx as never, principal, ctx.body.projectId);
        const started = await ctx.get(RunService).start(ctx.em, {
          userId: principal.userId,
          documentId: null,
          projectId: billing.projectId,
          teamId: billing.teamId,
          content: ctx.body.content,
          inputs: ctx.body.inputs,
          source: 'test',
          timeoutSeconds: ctx.body.timeout,
          budget: budgetOf(ctx.body.budget),
          onError: ctx.body.onError,
          store: false,
        });
        return runReply(started, ctx.body);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/block/:bid/api',
      summary: 'Run a deployed block (a pinned version, default the latest)',
      description:
        'Who may call is the deployment\'s `access` (docs/http/blocks.md): a credential, an `X-Deployment-Token`, or nobody for public deployments. Inputs are checked against the deployment\'s input definitions when it has them, else its input blocks. Runs of anonymous or token callers execute as the project owner (AI models and tools) and bill the project\'s team. With `runId`, attaches to an earlier run of this block instead: its events after `Last-Event-ID`, or its result. With an `Idempotency-Key` header, a repeated request of the same caller (user, deployment token, or anonymous address) attaches to the run the first one started (docs/runs.md).',
      tags,
      // Devices and anonymous tool-service tokens never run a deployment as their owner.
      auth: { optional: ['jwt', 'api_key', 'agent_token', 'oauth'] },
      params: BidParams,
      body: BlockApiBody,
      response: startResponseSpec,
      errors: {
        ...runErrorsDoc,
        401: 'A non-public deployment called with neither a credential nor a deployment token (authentication_required)',
        403: 'The deployment\'s access does not admit you (deployment_access_denied)',
        404: 'No such block (block_not_found), never deployed (deployment_not_found), no such version (block_version_not_found), or no such run of it (run_not_found)',
        422: 'The Idempotency-Key was used for another request (idempotency_key_reused); bad body (validation_failed)',
      },
      async handler(ctx) {
        const bid = ctx.params.bid;
        const runs = ctx.get(RunService);
        const deploymentToken = deploymentCallerOf(ctx).deploymentToken;
        const target = await ctx.get(DeploymentService).resolveApiRun(ctx.em, deploymentCallerOf(ctx), bid, ctx.body.version);
        if (ctx.body.runId) {
          // Only the deployment's own runs: a page run of the block is not the deployment's to show.
          const attached = await runs.attach(ctx.em, target.documentId, ctx.body.runId, { source: 'api' });
          if (!attached) throw runErrors.runNotFound();
          if (ctx.body.stream === false) return attached.result();
          const header = ctx.headers['last-event-id'];
          const after = header !== undefined && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : 0;
          return runReply({ ...attached, batches: () => attached.batches(after, ctx.signal) }, ctx.body);
        }
        const caller = ctx.principal ? `user:${ctx.principal.userId}` : deploymentToken ? `token:${sha256Hex(deploymentToken)}` : `anonymous:${ctx.ip}`;
        const { inputs = {}, timeout = null, onError = null } = ctx.body;
        const idempotency = idempotencyOf(ctx.headers['idempotency-key'], caller, { run: 'api', bid, version: target.version, inputs, timeout, onError, ...(ctx.body.budget !== undefined ? { budget: ctx.body.budget } : {}) });
        const started = await runs.start(ctx.em, {
          userId: await runAs(ctx.em, target),
          documentId: target.documentId,
          projectId: target.projectId,
          teamId: target.teamId,
          content: target.content,
          inputs: ctx.body.inputs,
          inputDefinitions: definitionsOf(target),
          source: 'api',
          version: target.version,
          timeoutSeconds: ctx.body.timeout,
          budget: budgetOf(ctx.body.budget),
          onError: ctx.body.onError,
          idempotency,
          store: true,
        });
        return startReply(ctx, started, ctx.body);
      },
    }),
  ];
}
