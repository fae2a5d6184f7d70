import type { EntityManager } from '@mikro-orm/core';
import { randomBytes } from 'node:crypto';
import { inject, injectable } from 'inversify';
import { sha256Hex } from '../../../kernel/crypto.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { User } from '../../identity/index.js';
import {
  authorizationRequestChecks,
  consentChecks,
  newAuthorizationRequest,
  type AuthorizationCheck,
  type AuthorizationCheckContext,
  type AuthorizationParams,
  type AuthorizationRequest,
} from '../checks/authorize/index.js';
import { oauthConfigServiceIdentifier, type OAuthConfig } from '../config.js';
import { OAuthAuthorizationCode } from '../entities/authorization-code.entity.js';
import { OAuthApp } from '../entities/oauth-app.entity.js';
import { scopeCatalogue } from '../scopes.js';
import { withQuery } from './issuer.js';

/**
 * The authorization endpoint: validates requests with the ordered checks, and issues the
 * single-use code once the signed-in user confirms.
 */
@injectable()
export class OAuthAuthorizationService {
  private readonly mobileClientIds: ReadonlySet<string>;
  readonly catalogue: Readonly<Record<string, string>>;

  constructor(
    @inject(oauthConfigServiceIdentifier) private readonly config: OAuthConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {
    const { production, sandbox } = config.mobileClientIds;
    this.mobileClientIds = new Set([production, sandbox].filter((id): id is string => !!id));
    this.catalogue = scopeCatalogue(config.extraScopes);
  }

  /** May this client hold mobile:full? */
  isMobileClient(clientId: string): boolean {
    return this.mobileClientIds.has(clientId);
  }

  /**
   * GET /oauth/authorize. Runs the checks on `request` (made with `newAuthorizationRequest`) so the
   * caller can tell from `request.redirectUri` whether an error may go back to the client.
   */
  validateAuthorizationRequest(em: EntityManager, request: AuthorizationRequest): Promise<void> {
    return this.run(authorizationRequestChecks, request, em);
  }

  /**
   * POST /oauth/authorize: the signed-in user confirmed. Validates the parameters again (the page
   * is not trusted with them) and issues a code bound to client, redirect URI, PKCE challenge,
   * scope and user. Answers the URI the page navigates to: the redirect URI with code, state and iss.
   */
  async confirm(em: EntityManager, params: AuthorizationParams, userId: string, issuer: string): Promise<string> {
    const request = newAuthorizationRequest(params);
    await this.run(consentChecks, request, em);
    const app = request.app!;
    const code = randomBytes(32).toString('base64url');
    const now = this.clock.nowMs();
    em.create(OAuthAuthorizationCode, {
      id: this.ids.next(),
      codeHash: sha256Hex(code),
      app: em.getReference(OAuthApp, app.id),
      user: em.getReference(User, userId),
      redirectUri: request.redirectUri!,
      codeChallenge: request.codeChallenge!,
      scope: request.scopes!.join(' '),
      tokenFamilyId: this.ids.next(),
      appEpoch: app.tokenEpoch,
      expiresAt: new Date(now + this.config.authorizationCodeTtlSeconds * 1000),
      consumedAt: null,
      createdAt: new Date(now),
    } as OAuthAuthorizationCode);
    await em.flush();
    // RFC 9207: `iss` lets the client tell which server answered (mix-up defence, RFC 9700 §4.4.2).
    return withQuery(request.redirectUri!, { code, state: request.state, iss: issuer });
  }

  private async run(checks: readonly AuthorizationCheck[], request: AuthorizationRequest, em: EntityManager): Promise<void> {
    const ctx: AuthorizationCheckContext = { em, catalogue: this.catalogue, mobileClientIds: this.mobileClientIds };
    for (const check of checks) await check.run(request, ctx);
  }
}
