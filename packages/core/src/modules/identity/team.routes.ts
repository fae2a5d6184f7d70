import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { PageQuery, pageOfAll, paging } from '../../kernel/http/dto/paging.js';
import { Reply } from '../../kernel/http/reply.js';
import { AddMemberBody, ChangeRoleBody, MemberParams, TeamNameBody, TeamParams } from './dto/team.dto.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { memberSchema, teamSchema } from './schemas.js';
import { TeamService } from './services/team.service.js';
import { toMemberView, toTeamView } from './views.js';

const tags = ['Teams'];
const auth = ['jwt', 'api_key'] as const;
const notMember = 'No such team, or you are not a member (team_not_found)';
const needsManager = 'Needs the team role owner or admin (team_role_required)';

export const teamRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'GET',
    path: '/teams',
    summary: 'Your teams, personal team first',
    tags,
    auth,
    query: PageQuery,
    response: { schema: pageSchema(teamSchema) },
    async handler(ctx) {
      const memberships = await ctx.get(TeamService).listForUser(ctx.em, ctx.requirePrincipal().userId);
      return pageOfAll(memberships.map((m) => toTeamView(m.team, m.role)), paging(ctx.query));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/teams',
    summary: 'Create a team (you become its owner)',
    tags,
    auth,
    body: TeamNameBody,
    response: { status: 201, schema: teamSchema },
    async handler(ctx) {
      const membership = await ctx.get(TeamService).create(ctx.em, ctx.requirePrincipal().userId, ctx.body.name);
      return Reply.json(toTeamView(membership.team, membership.role), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/teams/:teamId',
    summary: 'A team you belong to',
    tags,
    auth,
    params: TeamParams,
    response: { schema: teamSchema },
    errors: { 404: notMember },
    async handler(ctx) {
      const membership = await ctx.get(TeamService).requireMember(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId);
      return toTeamView(membership.team, membership.role);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/teams/:teamId',
    summary: 'Rename a team',
    tags,
    auth,
    params: TeamParams,
    body: TeamNameBody,
    response: { schema: teamSchema },
    errors: { 403: needsManager, 404: notMember },
    async handler(ctx) {
      const membership = await ctx.get(TeamService).rename(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId, ctx.body.name);
      return toTeamView(membership.team, membership.role);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/teams/:teamId',
    summary: 'Delete a team (owner only; not the personal team)',
    description:
      'A soft delete: the members and the projects (with their documents) go at once, and the team answers 404 from then on; ' +
      'its financial records (payment orders, the credit ledger, the subscription and the balance) are kept, and its subscription is no longer renewed. ' +
      'Open collaboration sockets on its documents close.',
    tags,
    auth,
    params: TeamParams,
    response: { status: 204 },
    errors: { 403: 'Only the owner can delete a team (team_role_required)', 404: notMember, 409: 'A personal team cannot be deleted (personal_team)' },
    async handler(ctx) {
      await ctx.get(TeamService).delete(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/teams/:teamId/members',
    summary: 'Members of a team',
    tags,
    auth,
    params: TeamParams,
    query: PageQuery,
    response: { schema: pageSchema(memberSchema) },
    errors: { 404: notMember },
    async handler(ctx) {
      const members = await ctx.get(TeamService).members(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId);
      return pageOfAll(members.map(toMemberView), paging(ctx.query));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/teams/:teamId/members',
    summary: 'Add an existing user to a team',
    refuseImpersonation: true,
    tags,
    auth,
    params: TeamParams,
    body: AddMemberBody,
    response: { status: 201, schema: memberSchema },
    errors: {
      403: needsManager,
      404: `${notMember}; or no user has that email (user_not_found)`,
      409: 'Already a member (already_member), or the team is a personal team (personal_team)',
    },
    async handler(ctx) {
      const member = await ctx.get(TeamService).addMember(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId, ctx.body.email, ctx.body.role);
      return Reply.json(toMemberView(member), 201);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/teams/:teamId/members/:userId',
    summary: "Change a member's role",
    refuseImpersonation: true,
    description: 'Giving `owner` transfers ownership; only the owner may, and the previous owner becomes admin.',
    tags,
    auth,
    params: MemberParams,
    body: ChangeRoleBody,
    response: { schema: memberSchema },
    errors: { 403: needsManager, 404: `${notMember}; or the user is not a member (member_not_found)`, 409: 'The team would lose its owner (last_owner)' },
    async handler(ctx) {
      const member = await ctx.get(TeamService).changeRole(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId, ctx.params.userId, ctx.body.role);
      return toMemberView(member);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/teams/:teamId/members/:userId',
    summary: 'Remove a member, or leave a team (your own user id)',
    refuseImpersonation: true,
    tags,
    auth,
    params: MemberParams,
    response: { status: 204 },
    errors: { 403: needsManager, 404: `${notMember}; or the user is not a member (member_not_found)`, 409: 'The owner cannot leave (last_owner)' },
    async handler(ctx) {
      await ctx.get(TeamService).removeMember(ctx.em, ctx.params.teamId, ctx.requirePrincipal().userId, ctx.params.userId);
    },
  }),
];
