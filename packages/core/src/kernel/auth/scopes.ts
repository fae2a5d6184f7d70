import { TrellisError } from '../errors.js';
import type { Principal } from './principal.js';

/**
 * Whether a credential may be used where `accepted` scopes are asked for. A credential without
 * scopes (a JWT, an unscoped API key) keeps the user's full authority; a scoped one (an OAuth
 * access token, a scoped API key or agent token) needs one of `accepted` or of `fullAccess`
 * (`auth.fullAccessScopes`).
 */
export function scopesAllow(principal: Principal, accepted: readonly string[], fullAccess: readonly string[]): boolean {
  if (principal.scopes === undefined) return true;
  return principal.scopes.some((scope) => accepted.includes(scope) || fullAccess.includes(scope));
}

/**
 * Throws 403 `insufficient_scope` with an RFC 6750 §3.1 challenge unless `scopesAllow`. The
 * dispatcher applies it to every route (with the route's `scopes`); WebSocket channels and other
 * entry points that authenticate by themselves call it too.
 */
export function requireScopes(principal: Principal, accepted: readonly string[], fullAccess: readonly string[]): void {
  if (scopesAllow(principal, accepted, fullAccess)) return;
  throw insufficientScope(accepted, fullAccess);
}

/** The 403 `insufficient_scope` of a credential that carries none of `accepted` or `fullAccess`. */
export function insufficientScope(accepted: readonly string[], fullAccess: readonly string[]): TrellisError {
  const needed = [...accepted, ...fullAccess].join(' ');
  return new TrellisError('forbidden', 'insufficient_scope', `This operation needs a credential with one of the scopes: ${needed}.`, {
    headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${needed}"` },
  });
}

/**
 * Gives every route without its own `scopes` the scopes of its kind of access: `read` for GET,
 * `write` for the other methods. A module calls it once over its route table.
 */
export function scopeRoutes<R extends { method: string; scopes?: readonly string[] }>(routes: readonly R[], scopes: { read: readonly string[]; write: readonly string[] }): R[] {
  return routes.map((route) => (route.scopes ? route : { ...route, scopes: route.method === 'GET' ? scopes.read : scopes.write }));
}
