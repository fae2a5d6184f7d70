import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { idsServiceIdentifier } from '../../ports/ids.js';
import { PageQuery, pageOf, paging } from '../../kernel/http/dto/paging.js';
import { CreateFolderBody, CreateProjectBody, ProjectParams, UpdateProjectBody } from './dto/project.dto.js';
import { fileTreeNodeSchema, projectDeletedSchema, projectPageSchema, projectSchema } from './schemas.js';
import { ProjectService, toTreeNode } from './services/project.service.js';
import { toProjectSummary, toProjectView } from './views.js';

const tags = ['Projects'];
/** The Project API takes a bearer token: a JWT, an API key or an agent token. */
const auth = ['jwt', 'api_key', 'agent_token'] as const;
const notFound = 'No such project, or no access to it (project_not_found)';

export const projectRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/project',
    summary: 'Create a project',
    description: 'The project belongs to a team (your personal team unless `teamId` is given) and starts with an empty file tree.',
    tags,
    auth,
    body: CreateProjectBody,
    response: { status: 201, schema: projectSchema },
    errors: { 404: 'Not a member of that team (team_not_found)', 409: 'The team has a project with this name (project_name_taken)' },
    async handler(ctx) {
      const service = ctx.get(ProjectService);
      const userId = ctx.requirePrincipal().userId;
      const project = await service.create(ctx.em, userId, ctx.body);
      return Reply.json(toProjectView(project, [], await service.permissions(ctx.em, project, userId)), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/list',
    summary: 'List your projects',
    description: 'The projects you own and the non-private projects of your teams, newest first, without their file trees.',
    tags,
    auth,
    query: PageQuery,
    response: { schema: projectPageSchema },
    async handler(ctx) {
      const service = ctx.get(ProjectService);
      const userId = ctx.requirePrincipal().userId;
      const p = paging(ctx.query);
      const { items, total } = await service.list(ctx.em, userId, p);
      const views = [];
      for (const project of items) views.push(toProjectSummary(project, await service.permissions(ctx.em, project, userId)));
      return pageOf(views, total, p);
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/project/:projectId',
    summary: 'Update a project (name, description, tools, access)',
    tags,
    auth,
    params: ProjectParams,
    body: UpdateProjectBody,
    response: { schema: projectSchema },
    errors: {
      403: 'No write permission (project_access_denied); or not the owner when changing access (project_owner_required)',
      404: notFound,
      409: 'The team has a project with this name (project_name_taken)',
    },
    async handler(ctx) {
      const service = ctx.get(ProjectService);
      const userId = ctx.requirePrincipal().userId;
      const { project, permissions } = await service.update(ctx.em, ctx.params.projectId, userId, ctx.body);
      return toProjectView(project, await service.tree(ctx.em, project.id), permissions);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/project/:projectId',
    summary: 'Delete a project with everything in it',
    description: 'Owner only. Deletes the documents, blocks, deployments and file tree of the project; there is no undo (blocks have a trash, projects do not).',
    tags,
    auth,
    params: ProjectParams,
    response: { schema: projectDeletedSchema },
    errors: { 403: 'Not the owner (project_owner_required), or no write permission (project_access_denied)', 404: notFound },
    async handler(ctx) {
      await ctx.get(ProjectService).delete(ctx.em, ctx.params.projectId, ctx.requirePrincipal().userId);
      return { id: ctx.params.projectId, deleted: true as const };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/project/:projectId',
    summary: 'A project with its file tree (filesFolder)',
    tags,
    auth,
    params: ProjectParams,
    response: { schema: projectSchema },
    errors: { 404: notFound },
    async handler(ctx) {
      const service = ctx.get(ProjectService);
      const { project, permissions } = await service.requireProject(ctx.em, ctx.params.projectId, ctx.requirePrincipal().userId);
      return toProjectView(project, await service.tree(ctx.em, project.id), permissions);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/project/:projectId/folders',
    summary: "Add a folder to a project's file tree",
    tags,
    auth,
    params: ProjectParams,
    body: CreateFolderBody,
    response: { status: 201, schema: fileTreeNodeSchema },
    errors: {
      403: 'No write permission in the project (project_access_denied)',
      404: `${notFound}; or the parent folder does not exist (node_not_found)`,
      422: 'The parent is a file (parent_not_folder)',
    },
    async handler(ctx) {
      const service = ctx.get(ProjectService);
      const { project } = await service.requireProject(ctx.em, ctx.params.projectId, ctx.requirePrincipal().userId, 'write');
      const node = await service.addNode(ctx.em, {
        project,
        key: ctx.get(idsServiceIdentifier).next(),
        label: ctx.body.label,
        type: 'folder',
        docType: 'folder',
        parentKey: ctx.body.parentKey ?? null,
      });
      return Reply.json(toTreeNode(node, []), 201);
    },
  }),
];
