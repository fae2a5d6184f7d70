import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import type { Permission, Principal } from '../auth/principal.js';
import type { TrellisError } from '../errors.js';
import type { RouteAuth } from './credential-rules.js';
import type { Reply } from './reply.js';
import type { Static, TSchema } from './response-schema.js';
import type { HttpMethod } from './types.js';

export { credentialRule, credentialRules, type RouteAuth } from './credential-rules.js';

export type ClassType<T = unknown> = new (...args: any[]) => T;

/** How errors of a route are written: the default shape, RFC 6749's, the billing envelope, OpenAI's `{ error: { message, type, code } }`, or a JSON-RPC 2.0 error response (MCP). */
export type ErrorFormat = 'default' | 'oauth' | 'billing' | 'openai' | 'jsonrpc';

export interface RequestContext<P = unknown, Q = unknown, B = unknown> {
  readonly requestId: string;
  readonly method: string;
  /** Path as routed (without base path). */
  readonly path: string;
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The request body exactly as received (empty when there is none), for handlers that verify a
   * signature over the bytes, such as payment webhooks. Declare no `body` DTO on such a route: the
   * dispatcher then neither parses nor checks the content type, and the handler reads these bytes.
   */
  readonly rawBody: Uint8Array;
  readonly principal: Principal | null;
  /**
   * On a route with optional authentication: why a credential that was sent was set aside (403
   * `insufficient_scope`, a scope it lacks), so the request runs as anonymous. A handler that
   * needs a credential throws this instead of asking for one; `requirePrincipal` does.
   */
  readonly credentialRefusal: TrellisError | null;
  /** The principal, or a 401 when the route let anonymous callers in (the `credentialRefusal` when there is one). */
  requirePrincipal(): Principal;
  /** A unit of work for this request: MikroORM `em.fork()`, created on first use. */
  readonly em: EntityManager;
  readonly log: Logger;
  readonly ip: string;
  readonly userAgent: string;
  /** Aborted when the client disconnects. */
  readonly signal: AbortSignal;
  /** Resolves a service from the kernel's container. */
  get<T>(id: ServiceIdentifier<T>): T;
}

/** What documents a response body: its TypeBox declaration (`kernel/http/response-schema.ts`), or a DTO class. */
export type ResponseSchema = TSchema | ClassType;

/** The body type a response declaration promises: `Static<S>` of a TypeBox schema, else anything. */
export type ResponseBody<S> = [S] extends [TSchema] ? Static<S> : unknown;

/** What a handler may return for a route whose success body is declared by `S`: that body, or a `Reply`. */
export type HandlerResult<S> = ResponseBody<S> | Reply | Promise<ResponseBody<S> | Reply>;

export interface RouteResponseSpec<S extends ResponseSchema = ResponseSchema> {
  status?: number;
  description?: string;
  /** The success body's declaration; the handler's return value is checked against it. */
  schema?: S;
  contentType?: string;
  /** Other media types the same status may answer with (a streamed variant), each with its schema. */
  mediaTypes?: ReadonlyArray<{ contentType: string; schema: ResponseSchema }>;
  /**
   * Other answers the handler gives on success (it returns them as `Reply`s): a 200 besides the
   * 201 of a create-or-edit route, the 302 of a redirecting endpoint. Each is documented as well.
   */
  alternatives?: RouteAlternativeResponse[];
}

export interface RouteAlternativeResponse {
  status: number;
  description: string;
  /** Body schema (omit for a body-less answer such as a redirect). */
  schema?: ResponseSchema;
  contentType?: string;
  /** Response headers worth documenting (`Location` of a redirect). */
  headers?: Record<string, { description: string; schema?: Record<string, unknown> }>;
}

export interface RouteDefinition<P = any, Q = any, B = any> {
  method: HttpMethod;
  /** `/teams/:teamId/members`; parameters are `:name` segments. */
  path: string;
  summary?: string;
  description?: string;
  tags?: string[];
  operationId?: string;
  /**
   * Who may call, one of the three rules of `credentialRules` (docs/http/README.md, "Credentials"):
   * `'none'` for public routes (a credential is not read), the accepted kinds (a credential is
   * required), or `{ optional: kinds }` (anonymous callers pass; a credential that is sent must be
   * of one of `kinds`, like on a route that requires one).
   */
  auth: RouteAuth;
  /** Permissions the principal must hold (all of them). */
  permission?: Permission | readonly Permission[];
  /**
   * Refuse the route (403 `impersonation_forbidden`) to a token an administrator obtained with
   * `become`: minting credentials, approving OAuth grants, changing passwords or permissions.
   */
  refuseImpersonation?: boolean;
  /** The response carries a credential (a token, a key): sent with `Cache-Control: no-store`. */
  noStore?: boolean;
  /**
   * Scopes that let a scoped credential (an OAuth access token, a scoped API key) in: it must carry
   * one of them, or one of `auth.fullAccessScopes`. Without this list only full-access scopes pass.
   * Credentials without scopes (JWTs, unscoped API keys) keep the user's full authority.
   * A failure answers 403 `insufficient_scope` (RFC 6750 §3.1).
   */
  scopes?: readonly string[];
  params?: ClassType<P>;
  query?: ClassType<Q>;
  body?: ClassType<B>;
  /**
   * The request body of a route without a `body` DTO that reads `rawBody` itself (a multipart
   * upload), for the OpenAPI document only: the handler parses and checks it.
   */
  rawBodyDoc?: { contentType: string; schema: Record<string, unknown>; required?: boolean };
  /** Largest accepted body for this route (default `server.maxBodyBytes`). */
  maxBodyBytes?: number;
  /** Answer even while the kernel is starting or stopping (health probes). */
  alwaysAvailable?: boolean;
  /** Accepted body encodings; default JSON only. */
  bodyTypes?: ReadonlyArray<'json' | 'form'>;
  response?: RouteResponseSpec;
  /** Documented error responses (status → description) for the OpenAPI document. */
  errors?: Record<number, string>;
  errorFormat?: ErrorFormat;
  /** Status and code used when params, query or body fail validation (default 422 `validation_failed`). */
  validationError?: { status: number; code: string };
  /**
   * `'ignore'` drops query and body fields the DTO does not declare instead of refusing them, for
   * protocols that require it (RFC 6749 §3.1: unrecognised parameters MUST be ignored). Default `'reject'`.
   */
  unknownFields?: 'reject' | 'ignore';
  /** `'any'` allows every origin (no credentials); default follows `server.corsOrigins`. */
  cors?: 'any' | 'default';
  /** Leave out of the OpenAPI document. */
  hidden?: boolean;
  handler(ctx: RequestContext<P, Q, B>): unknown;
}

/** A route as written with `defineRoute`: its handler must return the body its response declares. */
export type TypedRouteDefinition<P, Q, B, S extends ResponseSchema> = Omit<RouteDefinition<P, Q, B>, 'response' | 'handler'> & {
  response?: RouteResponseSpec<S>;
  handler(ctx: RequestContext<P, Q, B>): HandlerResult<S>;
};

/**
 * Declares a route with its types inferred from the DTO classes and the response declaration: a
 * handler whose value does not match `response.schema` (a TypeBox schema) does not compile.
 */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined, S extends ResponseSchema = ClassType>(
  route: TypedRouteDefinition<P, Q, B, S>,
): RouteDefinition<P, Q, B> {
  return route as RouteDefinition<P, Q, B>;
}
