import { IsBoolean } from 'class-validator';
import { TrellisError, isTrellisError } from '../../kernel/errors.js';
import { Reply } from '../../kernel/http/reply.js';
import { jsonObject, Type, uuid } from '../../kernel/http/response-schema.js';
import { defineRoute, type RequestContext, type RouteDefinition } from '../../kernel/http/route.js';
import { configServiceIdentifier, kernelServiceIdentifier } from '../../kernel/tokens.js';
import { BidParams, blockAuth, BlockService } from '../blocks/index.js';
import { User } from '../identity/index.js';
import { issuerOf } from '../oauth/index.js';
import { callerOf } from '../openai-compat/index.js';
import { McpTool } from './entities/mcp-tool.entity.js';
import { MCP_SCOPE, serveMcp } from './transport.js';

const tags = ['MCP'];

/** The issuer (and so the resource's base URL): `publicUrl`, else where the host listens. */
const baseUrlOf = (ctx: RequestContext) => issuerOf(ctx.get(configServiceIdentifier), ctx.get(kernelServiceIdentifier).servedUrl);
const metadataUrlOf = (ctx: RequestContext) => `${baseUrlOf(ctx)}/.well-known/oauth-protected-resource/mcp`;

/** RFC 9728 §5.1: a 401 names where the resource's metadata is, so a client finds the authorization server. */
function challenge(ctx: RequestContext, error: TrellisError): TrellisError {
  const invalid = error.code === 'invalid_token' ? ', error="invalid_token"' : '';
  return new TrellisError(error.kind, error.code, error.message, {
    headers: { 'www-authenticate': `Bearer resource_metadata="${metadataUrlOf(ctx)}", scope="${MCP_SCOPE}"${invalid}` },
  });
}

/** RFC 9728 §2: the protected resource's metadata, as this server answers it. */
const protectedResourceSchema = Type.Object({
  resource: Type.String(),
  authorization_servers: Type.Array(Type.String()),
  scopes_supported: Type.Optional(Type.Array(Type.String())),
  bearer_methods_supported: Type.Optional(Type.Array(Type.String())),
  resource_name: Type.Optional(Type.String()),
  resource_documentation: Type.Optional(Type.String()),
});

const protectedResource = (path: string, hidden: boolean) =>
  defineRoute({
    method: 'GET',
    path,
    summary: 'OAuth protected resource metadata of the MCP server (RFC 9728)',
    tags,
    auth: 'none',
    cors: 'any',
    hidden,
    response: { schema: protectedResourceSchema },
    handler(ctx) {
      const base = baseUrlOf(ctx);
      return {
        resource: `${base}/mcp`,
        authorization_servers: [base],
        scopes_supported: [MCP_SCOPE],
        bearer_methods_supported: ['header'],
        resource_name: 'Trellis MCP server',
        resource_documentation: `${base}/docs`,
      };
    },
  });

const methodNotAllowed = (method: 'GET' | 'DELETE') =>
  defineRoute({
    method,
    path: '/mcp',
    summary: method === 'GET' ? 'No server-initiated stream (stateless MCP server)' : 'No session to end (stateless MCP server)',
    description: 'The MCP server keeps no session: every message is a POST. Answers 405 with `Allow: POST`, as the Streamable HTTP transport lets a stateless server.',
    tags,
    auth: 'none',
    errorFormat: 'jsonrpc',
    response: { status: 405, description: 'Method not allowed', schema: Type.Ref('#/components/schemas/JsonRpcError') },
    handler: () => Reply.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: send MCP messages with POST.' }, id: null }, 405, { allow: 'POST' }),
  });

class McpSettingBody {
  @IsBoolean()
  enabled!: boolean;
}

const settingSchema = Type.Object({ blockId: uuid(), enabled: Type.Boolean() });

/** The MCP server (docs/mcp.md): `/mcp`, its protected-resource metadata, and each deployment's opt-in. */
export function mcpRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/mcp',
      summary: 'MCP server (Streamable HTTP): deployed blocks as tools',
      description:
        'One JSON-RPC message per request (initialize, tools/list, tools/call, notifications), answered as JSON or as an SSE stream (progress notifications, then the result). Send `Accept: application/json, text/event-stream`. Credentials: an OAuth access token with the `mcp:tools` scope (see the protected-resource metadata), an API key, a user token, or a deployment token as the bearer. Without one: 401 with `WWW-Authenticate: Bearer resource_metadata=...`.',
      tags,
      auth: 'none',
      errorFormat: 'jsonrpc',
      response: {
        description: 'The JSON-RPC response (application/json), or an SSE stream of messages ending with it (text/event-stream).',
        schema: jsonObject({ description: 'A JSON-RPC 2.0 response (or a batch of them).' }),
        mediaTypes: [{ contentType: 'text/event-stream', schema: Type.String({ description: 'SSE `event: message` frames, each a JSON-RPC message.' }) }],
        alternatives: [{ status: 202, description: 'A notification or response from the client was accepted (no body).' }],
      },
      errors: {
        400: 'Not a JSON-RPC message, or the transport refused it (JSON-RPC error)',
        401: 'No credential, or one this server does not know: `WWW-Authenticate` names the resource metadata (missing_credentials, invalid_token)',
        403: 'A credential kind that cannot call tools (credential_not_allowed), or an OAuth token without the mcp:tools scope (insufficient_scope)',
        406: 'Accept does not list application/json and text/event-stream',
        415: 'Not application/json',
      },
      async handler(ctx) {
        let caller;
        try {
          caller = await callerOf(ctx, [MCP_SCOPE]);
        } catch (error) {
          throw isTrellisError(error) && error.status === 401 ? challenge(ctx, error) : error;
        }
        if (!caller.principal && !caller.deploymentToken) {
          throw challenge(ctx, new TrellisError('unauthenticated', 'missing_credentials', 'The MCP server needs a bearer token: an OAuth access token (see the resource metadata), an API key or a deployment token.'));
        }
        return serveMcp(ctx, caller);
      },
    }),
    methodNotAllowed('GET'),
    methodNotAllowed('DELETE'),
    protectedResource('/.well-known/oauth-protected-resource', false),
    protectedResource('/.well-known/oauth-protected-resource/mcp', false),
    defineRoute({
      method: 'PUT',
      path: '/block/:bid/mcp',
      summary: 'Offer a deployed block as an MCP tool, or stop offering it',
      description: 'Needs the write permission on the block. The tool is offered at /mcp to callers who may run the deployment (its access rules).',
      tags: ['Blocks', ...tags],
      auth: blockAuth,
      params: BidParams,
      body: McpSettingBody,
      response: { schema: settingSchema },
      errors: { 403: 'No write permission (block_access_denied)', 404: 'No such block (block_not_found)' },
      async handler(ctx) {
        const principal = ctx.requirePrincipal();
        const { block } = await ctx.get(BlockService).requireBlock(ctx.em, principal, ctx.params.bid, { wanted: 'write' });
        const existing = await ctx.em.findOne(McpTool, { block: block.id });
        if (ctx.body.enabled && !existing) {
          ctx.em.create(McpTool, { block, enabledBy: ctx.em.getReference(User, principal.userId), createdAt: new Date() });
          await ctx.em.flush();
        } else if (!ctx.body.enabled && existing) {
          await ctx.em.nativeDelete(McpTool, { block: block.id });
        }
        return { blockId: block.id, enabled: ctx.body.enabled };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/block/:bid/mcp',
      summary: 'Whether a block is offered as an MCP tool',
      tags: ['Blocks', ...tags],
      auth: blockAuth,
      params: BidParams,
      response: { schema: settingSchema },
      errors: { 404: 'No such block (block_not_found)' },
      async handler(ctx) {
        const { block } = await ctx.get(BlockService).requireBlock(ctx.em, ctx.requirePrincipal(), ctx.params.bid);
        return { blockId: block.id, enabled: (await ctx.em.count(McpTool, { block: block.id })) > 0 };
      },
    }),
  ];
}
