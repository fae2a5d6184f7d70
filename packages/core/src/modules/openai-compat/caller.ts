import { extractBearer } from '../../kernel/auth/authenticator.js';
import type { CredentialKind, Principal } from '../../kernel/auth/principal.js';
import { insufficientScope, scopesAllow } from '../../kernel/auth/scopes.js';
import { TrellisError } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/route.js';
import { authenticatorServiceIdentifier, configServiceIdentifier } from '../../kernel/tokens.js';
import { DEPLOYMENT_TOKEN_HEADER, type DeploymentCaller } from '../blocks/index.js';

/** Deployment tokens start with this prefix (`DeploymentService`); as a bearer they name a deployment, not a user. */
const DEPLOYMENT_TOKEN_PREFIX = 'trd_';

/** The credentials that may call the OpenAI-compatible API as a user (devices and tool-service tokens may not). */
const userKinds: readonly CredentialKind[] = ['jwt', 'api_key', 'agent_token', 'oauth'];

export interface CompatCaller extends DeploymentCaller {
  principal: Principal | null;
}

export const missingKey = () =>
  new TrellisError('unauthenticated', 'missing_credentials', 'Send an API key, a user token or a deployment token as `Authorization: Bearer <key>`.', {
    headers: { 'www-authenticate': 'Bearer' },
  });

/**
 * Who calls: OpenAI clients send their key as `Authorization: Bearer`, so a deployment token
 * (`trd_`) is read from there as well as from `X-Deployment-Token`; any other bearer is verified
 * like on every route (API key, JWT, agent or OAuth token); a scoped one needs one of `scopes`
 * or a full-access scope.
 */
export async function callerOf(ctx: RequestContext, scopes: readonly string[] = []): Promise<CompatCaller> {
  const bearer = extractBearer(ctx.headers);
  const headerToken = ctx.headers[DEPLOYMENT_TOKEN_HEADER] || undefined;
  if (bearer?.startsWith(DEPLOYMENT_TOKEN_PREFIX)) return { principal: null, deploymentToken: bearer, refusal: null };
  if (!bearer) return { principal: null, deploymentToken: headerToken, refusal: null };
  const principal = await ctx.get(authenticatorServiceIdentifier).authenticate(bearer, { ip: ctx.ip, userAgent: ctx.userAgent });
  if (!userKinds.includes(principal.kind)) {
    throw new TrellisError('forbidden', 'credential_not_allowed', 'This credential kind cannot call the OpenAI-compatible API (use an API key, a user token or a deployment token).');
  }
  const fullAccess = ctx.get(configServiceIdentifier).auth.fullAccessScopes;
  if (!scopesAllow(principal, scopes, fullAccess)) throw insufficientScope(scopes, fullAccess);
  return { principal, deploymentToken: headerToken, refusal: null };
}
