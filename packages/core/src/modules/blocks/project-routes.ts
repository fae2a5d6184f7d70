import { raw, type FilterQuery } from '@mikro-orm/core';
import { Reply } from '../../kernel/http/reply.js';
import { PageQuery, pageOf, paging } from '../../kernel/http/dto/paging.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import { ProjectService } from '../projects/index.js';
import { BlockIdParams, DeploymentQuery, InstallBody, PidBidParams, ProjectBlockParams, ProjectIdParams, RestoreTrashBody, SearchQuery } from './dto/block.dto.js';
import type { Block } from './entities/block.entity.js';
import { projectRunsServiceIdentifier } from './project-runs.js';
import { blockAuth } from './routes.js';
import {
  blockPageSchema,
  blockSchema,
  blockVersionSchema,
  blockWithContentSchema,
  deploymentDetailSchema,
  deploymentSchema,
  restoreTrashResultSchema,
  runSummarySchema,
  searchResultSchema,
} from './schemas.js';
import { BlockService } from './services/block.service.js';
import { DeploymentService } from './services/deployment.service.js';
import { toBlockVersionView, toBlockView, toBlockViews, toDeploymentDetail, toDeploymentView } from './views.js';

const tags = ['Projects'];
const projectMissing = 'No such project, or no access to it (project_not_found)';
const blockMissing = 'No such block in this project, or no access to it (block_not_found)';
const noWrite = 'No write permission in the project (project_access_denied, block_access_denied)';

/** `%text%`, lower-cased; `%` and `_` in the text match any one character (no portable LIKE escape). */
const likePattern = (text: string) => `%${text.toLowerCase().replace(/[%_]/g, '_')}%`;

/** The Project API endpoints about the blocks of a project: runs, deployments, install, search, trash, versions. */
export const blockProjectRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/project/:projectId/runs',
    summary: 'The runs of a project',
    description: "Runs of the project's documents and blocks, newest first, as the module that records runs lists them (`ProjectRuns`).",
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    query: PageQuery,
    response: { schema: pageSchema(runSummarySchema) },
    errors: { 404: projectMissing },
    async handler(ctx) {
      const { project } = await ctx.get(ProjectService).requireProject(ctx.em, ctx.params.projectId, ctx.requirePrincipal().userId);
      const p = paging(ctx.query);
      const { container } = ctx.get(kernelServiceIdentifier);
      if (!container.isBound(projectRunsServiceIdentifier)) return pageOf([], 0, p);
      const { items, total } = await container.get(projectRunsServiceIdentifier).list(ctx.em, project.id, p);
      return pageOf(items, total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/:projectId/deployments',
    summary: 'The deployed blocks of a project',
    description: 'One item per deployed block outside the trash (its current settings and latest version), most recently deployed first.',
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    query: PageQuery,
    response: { schema: pageSchema(deploymentSchema) },
    errors: { 404: projectMissing },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(DeploymentService).projectDeployments(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, p);
      return pageOf(items.map(toDeploymentView), total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/deployment/:blockId',
    summary: 'Deployment detail of a block',
    description:
      'The deployment with the content of one version (`version`, default the latest) and the list of versions. Visible to readers of the project, to members of its team when access is `team`, and to every signed-in user when `public`.',
    tags,
    auth: blockAuth,
    params: BlockIdParams,
    query: DeploymentQuery,
    response: { schema: deploymentDetailSchema },
    errors: { 404: 'No such block or no sight of it (block_not_found), never deployed (deployment_not_found), or no such version (block_version_not_found)' },
    async handler(ctx) {
      const { block, version, versions } = await ctx.get(DeploymentService).detail(ctx.em, ctx.requirePrincipal(), ctx.params.blockId, ctx.query.version);
      return toDeploymentDetail(block, version, versions);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/project/:projectId/install/:blockId',
    summary: 'Install a deployed block into a project, pinned to a version',
    description: "Creates a block in the project with the content and settings of the deployment's version (`version`, default the latest); `installedFrom` records the block and version.",
    tags,
    auth: blockAuth,
    params: ProjectBlockParams,
    body: InstallBody,
    response: { status: 201, schema: blockWithContentSchema },
    errors: {
      403: noWrite,
      404: `${projectMissing}; the block is missing or hidden (block_not_found), never deployed (deployment_not_found), or has no such version (block_version_not_found)`,
      409: 'The project has a block with this name (block_name_taken): pass another `name`',
    },
    async handler(ctx) {
      const installed = await ctx.get(DeploymentService).install(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, ctx.params.blockId, ctx.body);
      return Reply.json(toBlockView(installed, await ctx.get(BlockService).document(ctx.em, installed.id), true), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/:projectId/search',
    summary: 'Search the blocks (pages) or deployments of a project',
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    query: SearchQuery,
    response: { schema: searchResultSchema },
    errors: { 404: projectMissing, 422: '`type` missing or not page or deployment (validation_failed)' },
    async handler(ctx) {
      const principal = ctx.requirePrincipal();
      const deployments = ctx.get(DeploymentService);
      const p = paging(ctx.query);
      const { type, fromBid, q } = ctx.query;
      const where: FilterQuery<Block> = {};
      if (q) Object.assign(where, { [raw((alias) => `lower(${alias}.name)`)]: { $like: likePattern(q) } });
      const withNext = async <T extends { id: string }>(items: T[], sourceOf: (item: T) => string): Promise<(T & { nextVersion?: string })[]> => {
        if (ctx.query.nextVersion !== true) return items;
        const out = [];
        for (const item of items) out.push({ ...item, nextVersion: await deployments.next(ctx.em, sourceOf(item)) });
        return out;
      };
      if (type === 'deployment') {
        if (fromBid) where.id = fromBid;
        const { items, total } = await deployments.projectDeployments(ctx.em, principal, ctx.params.projectId, p, where);
        return { type, ...pageOf(await withNext(items.map(toDeploymentView), (d) => d.blockId), total, p) };
      }
      if (fromBid) where.installedFromBlockId = fromBid;
      const { items, total } = await ctx.get(BlockService).list(ctx.em, principal, ctx.params.projectId, p, where);
      return { type, ...pageOf(await withNext(await toBlockViews(ctx.em, items), (b) => b.installedFrom?.blockId ?? b.id), total, p) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/:projectId/trash',
    summary: 'The blocks in the trash of a project',
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    query: PageQuery,
    response: { schema: blockPageSchema },
    errors: { 404: projectMissing },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(BlockService).trash(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, p);
      return pageOf(await toBlockViews(ctx.em, items), total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/:pid/versions/:bid',
    summary: 'Version history of a block: its deployed versions',
    description: 'Deployed versions, newest first, without content (the deployment detail has it). The edit history of the page is `GET /documents/:bid/versions`.',
    tags,
    auth: blockAuth,
    params: PidBidParams,
    query: PageQuery,
    response: { schema: pageSchema(blockVersionSchema) },
    errors: { 404: blockMissing },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(DeploymentService).history(ctx.em, ctx.requirePrincipal(), ctx.params.pid, ctx.params.bid, p);
      return pageOf(items.map(toBlockVersionView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/project/:pid/restore/:bid',
    summary: 'Restore a block from the trash',
    description: 'The page returns to the folder it was in (or the top of the tree when that folder is gone), under its name.',
    tags,
    auth: blockAuth,
    params: PidBidParams,
    response: { schema: blockSchema },
    errors: { 403: noWrite, 404: `${blockMissing}; or the block is not in the trash (block_not_in_trash)` },
    async handler(ctx) {
      const blocks = ctx.get(BlockService);
      const block = await blocks.restore(ctx.em, ctx.requirePrincipal(), ctx.params.pid, ctx.params.bid);
      return (await toBlockViews(ctx.em, [block]))[0];
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/project/restore-trash',
    summary: "Empty a project's trash by restoring everything in it",
    description: 'Restores every block in the trash of `projectId` (or only `blockIds`). Deleting for good is `DELETE /block/:projectId/:pageId?confirm=true`.',
    tags,
    auth: blockAuth,
    body: RestoreTrashBody,
    response: { schema: restoreTrashResultSchema },
    errors: { 403: 'No write permission in the project (project_access_denied)', 404: projectMissing },
    async handler(ctx) {
      const restored = await ctx.get(BlockService).restoreAll(ctx.em, ctx.requirePrincipal(), ctx.body.projectId, ctx.body.blockIds);
      return { projectId: ctx.body.projectId, restored };
    },
  }),
];
