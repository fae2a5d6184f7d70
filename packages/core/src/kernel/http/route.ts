import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import type { CredentialKind, Permission, Principal } from '../auth/principal.js';
import type { HttpMethod } from './types.js';

export type ClassType<T = unknown> = new (...args: any[]) => T;

/** How errors of a route are written: the default shape, RFC 6749's, or the billing envelope. */
export type ErrorFormat = 'default' | 'oauth' | 'billing';

export interface RequestContext<P = unknown, Q = unknown, B = unknown> {
  readonly requestId: string;
  readonly method: string;
  /** Path as routed (without base path). */
  readonly path: string;
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  readonly headers: Readonly<Record<string, string>>;
  readonly principal: Principal | null;
  /** The principal, or a 401 when the route let anonymous callers in. */
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

export interface RouteResponseSpec {
  status?: number;
  description?: string;
  /** DTO class documenting the response body, or a JSON Schema. */
  schema?: ClassType | Record<string, unknown>;
  contentType?: string;
}

export interface RouteDefinition<P = any, Q = any, B = any> {
  method: HttpMethod;
  /** `/teams/:teamId/members`; parameters are `:name` segments. */
  path: string;
  summary?: string;
  description?: string;
  tags?: string[];
  operationId?: string;
  /** `'none'` for public routes, `'optional'` to read a credential when present, else the accepted kinds. */
  auth: 'none' | 'optional' | readonly CredentialKind[];
  /** Permissions the principal must hold (all of them). */
  permission?: Permission | readonly Permission[];
  params?: ClassType<P>;
  query?: ClassType<Q>;
  body?: ClassType<B>;
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
  /** `'any'` allows every origin (no credentials); default follows `server.corsOrigins`. */
  cors?: 'any' | 'default';
  /** Leave out of the OpenAPI document. */
  hidden?: boolean;
  handler(ctx: RequestContext<P, Q, B>): unknown;
}

/** Declares a route with its types inferred from the DTO classes. */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  route: RouteDefinition<P, Q, B>,
): RouteDefinition<P, Q, B> {
  return route;
}
