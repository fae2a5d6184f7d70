import { Reply } from '../../kernel/http/reply.js';
import { PageQuery, pageOf, paging } from '../../kernel/http/dto/paging.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import {
  BlockIdParams,
  BidParams,
  CreateBlockBody,
  DeleteBlockQuery,
  DeployBody,
  PageParams,
  ProjectIdParams,
  ProjectPageParams,
  UpdateBlockBody,
  UpdateDeploymentBody,
} from './dto/block.dto.js';
import {
  blockPageSchema,
  blockWithContentSchema,
  deployResultSchema,
  deploymentSettingsResultSchema,
  nextVersionSchema,
  removeResultSchema,
} from './schemas.js';
import { BlockService } from './services/block.service.js';
import { deploymentBudgetsServiceIdentifier } from './project-runs.js';
import { DeploymentService } from './services/deployment.service.js';
import { toBlockVersionView, toBlockView, toBlockViews } from './views.js';

const tags = ['Blocks'];
/** The Block API takes a bearer token: a JWT, an API key or an agent token. */
export const blockAuth = ['jwt', 'api_key', 'agent_token'] as const;
const missing = 'No such block, it is in the trash, or no access to it (block_not_found)';
const noWrite = "No write permission in the block's project (block_access_denied)";
const projectMissing = 'No such project, or no access to it (project_not_found)';
const invalid = 'A field fails validation, such as an unknown `type` (validation_failed)';

/**
 * The Block API without its three run endpoints (`POST /block/:pageId/run`, `POST /block/test`,
 * `POST /block/:bid/api`), which belong to the run engine and resolve what they run through
 * `BlockService.resolvePageRun` and `DeploymentService.resolveApiRun`.
 */
export const blockRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/block/list/:projectId',
    summary: 'List the blocks of a project',
    description: 'Blocks outside the trash, oldest first, without their content.',
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    query: PageQuery,
    response: { schema: blockPageSchema },
    errors: { 404: projectMissing },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(BlockService).list(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, p);
      return pageOf(await toBlockViews(ctx.em, items), total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/block/:pageId',
    summary: 'Read a block with its content',
    tags,
    auth: blockAuth,
    params: PageParams,
    response: { schema: blockWithContentSchema },
    errors: { 404: missing },
    async handler(ctx) {
      const blocks = ctx.get(BlockService);
      const { block } = await blocks.requireBlock(ctx.em, ctx.requirePrincipal(), ctx.params.pageId);
      return toBlockView(block, await blocks.currentDocument(ctx.em, block.id), true);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/block/:projectId',
    summary: 'Create a block in a project',
    description: 'Creates the block and its page (a document with `docType` `block`) in the project file tree; edit its content like any document.',
    tags,
    auth: blockAuth,
    params: ProjectIdParams,
    body: CreateBlockBody,
    response: { status: 201, schema: blockWithContentSchema },
    errors: {
      400: 'The content is not a valid document (invalid_content)',
      403: 'No write permission in the project (project_access_denied)',
      404: `${projectMissing}; or the parent folder does not exist (node_not_found)`,
      409: 'The project has a block with this name (block_name_taken)',
      422: invalid,
    },
    async handler(ctx) {
      const blocks = ctx.get(BlockService);
      const block = await blocks.create(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, ctx.body);
      return Reply.json(toBlockView(block, await blocks.document(ctx.em, block.id), true), 201);
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/block/:pageId',
    summary: 'Update a block (name, description, content)',
    description: 'The content is stored by the documents module: a new content hash and a version, or through the collaborative channel while a session holds the page.',
    tags,
    auth: blockAuth,
    params: PageParams,
    body: UpdateBlockBody,
    response: { schema: blockWithContentSchema },
    errors: {
      400: 'The content is not a valid document (invalid_content)',
      403: noWrite,
      404: missing,
      409: 'The project has a block with this name (block_name_taken); or the content changed since base_version (version_conflict)',
      422: invalid,
    },
    async handler(ctx) {
      const blocks = ctx.get(BlockService);
      const { base_version: baseVersion, ...rest } = ctx.body;
      const block = await blocks.update(ctx.em, ctx.requirePrincipal(), ctx.params.pageId, { ...rest, baseVersion });
      return toBlockView(block, await blocks.document(ctx.em.fork(), block.id), true);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/block/:projectId/:pageId',
    summary: 'Move a block to the trash, or delete it for good with confirm',
    tags,
    auth: blockAuth,
    params: ProjectPageParams,
    query: DeleteBlockQuery,
    response: { schema: removeResultSchema },
    errors: { 403: noWrite, 404: `${missing}; without confirm, also a block already in the trash` },
    async handler(ctx) {
      const result = await ctx.get(BlockService).remove(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, ctx.params.pageId, ctx.query.confirm === true);
      return { id: ctx.params.pageId, result };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/block/:projectId/:pageId/duplicate',
    summary: 'Duplicate a block (content and settings)',
    description: 'The copy, named `[Copy] name` (then `[Copy-2] name`, ...), gets the content, description, type and deployment settings; it is a draft: deployed versions and the deployment token are not copied.',
    tags,
    auth: blockAuth,
    params: ProjectPageParams,
    response: { status: 201, schema: blockWithContentSchema },
    errors: { 403: noWrite, 404: missing },
    async handler(ctx) {
      const blocks = ctx.get(BlockService);
      const copy = await blocks.duplicate(ctx.em, ctx.requirePrincipal(), ctx.params.projectId, ctx.params.pageId);
      return Reply.json(toBlockView(copy, await blocks.document(ctx.em, copy.id), true), 201);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/block/:blockId/deploy',
    summary: 'Deploy a block: publish its content as an immutable version',
    tags,
    auth: blockAuth,
    params: BlockIdParams,
    body: DeployBody,
    response: { status: 201, schema: deployResultSchema },
    errors: {
      403: noWrite,
      404: missing,
      409: 'The version is already deployed (block_version_exists)',
      422: `${invalid}; or the version is not one to three dot-separated numbers (invalid_version)`,
    },
    async handler(ctx) {
      const { block, version, deploymentToken, budget } = await ctx.get(DeploymentService).deploy(ctx.em, ctx.requirePrincipal(), ctx.params.blockId, ctx.body);
      // A raised (or cleared) budget resumes the deployment's runs that wait for it.
      if (budget) await deploymentBudgetChanged(ctx, block.id, budget);
      const views = await toBlockViews(ctx.em.fork(), [block]);
      return Reply.json({ block: views[0], version: toBlockVersionView(version), ...(deploymentToken ? { deploymentToken } : {}) }, 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/block/:blockId/next-version',
    summary: 'The next free version of a block',
    tags,
    auth: blockAuth,
    params: BlockIdParams,
    response: { schema: nextVersionSchema },
    errors: { 404: missing },
    async handler(ctx) {
      const { block, version } = await ctx.get(DeploymentService).nextVersion(ctx.em, ctx.requirePrincipal(), ctx.params.blockId);
      return { blockId: block.id, version, latestVersion: block.latestVersion };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/block/:bid/deployment',
    summary: "Set a block's deployment: input definitions, access, deployType, cover, budget",
    description: 'On a block never deployed this publishes its first version with these settings; on a deployed block it changes the settings (who may call the deployment) without a new version.',
    tags,
    auth: blockAuth,
    params: BidParams,
    body: UpdateDeploymentBody,
    response: { schema: deploymentSettingsResultSchema },
    errors: { 403: noWrite, 404: missing, 422: invalid },
    async handler(ctx) {
      const { block, version, deploymentToken, budget } = await ctx.get(DeploymentService).setDeployment(ctx.em, ctx.requirePrincipal(), ctx.params.bid, ctx.body);
      // A raised (or cleared) budget resumes the deployment's runs that wait for it.
      if (budget) await deploymentBudgetChanged(ctx, block.id, budget);
      const views = await toBlockViews(ctx.em.fork(), [block]);
      return { block: views[0], version: version ? toBlockVersionView(version) : null, ...(deploymentToken ? { deploymentToken } : {}) };
    },
  }),
];

/** Tells the module that runs deployments (when one is loaded) that a deployment's budget changed. */
async function deploymentBudgetChanged(ctx: RequestContext, blockId: string, budget: { before: number | null; after: number | null }): Promise<void> {
  const { container } = ctx.get(kernelServiceIdentifier);
  if (container.isBound(deploymentBudgetsServiceIdentifier)) await container.get(deploymentBudgetsServiceIdentifier).changed(blockId, budget.before, budget.after);
}
