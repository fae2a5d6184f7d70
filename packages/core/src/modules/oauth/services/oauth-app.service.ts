import { sql, UniqueConstraintViolationException, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { randomBytes } from 'node:crypto';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { clientIdPattern } from '../dto/admin.dto.js';
import { OAuthApp } from '../entities/oauth-app.entity.js';
import { redirectUriProblem } from '../redirect-uri-rules.js';
import { MOBILE_FULL_SCOPE } from '../scopes.js';
import { OAuthAuthorizationService } from './oauth-authorization.service.js';
import { OAuthTokenService } from './oauth-token.service.js';

export interface OAuthAppInput {
  name: string;
  description?: string;
  redirect_uris: string[];
  scopes: string[];
  homepage_url?: string | null;
  logo_url?: string | null;
  client_id?: string;
}

export type OAuthAppChanges = Partial<Omit<OAuthAppInput, 'client_id'>>;

/**
 * Administration of OAuth apps (site administrators, the CLI). Changing scopes or redirect URIs,
 * disabling and deleting revoke every token of the app (spec: OAuth app state table).
 */
@injectable()
export class OAuthAppService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(OAuthTokenService) private readonly tokens: OAuthTokenService,
    @inject(OAuthAuthorizationService) private readonly authorization: OAuthAuthorizationService,
  ) {}

  async list(em: EntityManager, paging: Paging, search?: string): Promise<{ items: OAuthApp[]; total: number }> {
    const where: FilterQuery<OAuthApp> = { deletedAt: null };
    const term = search?.trim();
    if (term) {
      // Case-insensitive on both dialects. % and _ in the term act as LIKE wildcards (SQLite has
      // no default escape character).
      const pattern = `%${term.toLowerCase()}%`;
      Object.assign(where, {
        $or: [{ [sql.lower((alias) => `${alias}.name`)]: { $like: pattern } }, { [sql.lower((alias) => `${alias}.client_id`)]: { $like: pattern } }],
      });
    }
    const [items, total] = await em.findAndCount(OAuthApp, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: paging.size,
      offset: paging.offset,
    });
    return { items, total };
  }

  /** An app that is not deleted, or 404. */
  async get(em: EntityManager, id: string): Promise<OAuthApp> {
    const app = await em.findOne(OAuthApp, { id, deletedAt: null });
    if (!app) throw new TrellisError('not_found', 'oauth_app_not_found', 'No such OAuth app.');
    return app;
  }

  /** By client_id (the CLI), or 404. */
  async getByClientId(em: EntityManager, clientId: string): Promise<OAuthApp> {
    const app = await em.findOne(OAuthApp, { clientId, deletedAt: null });
    if (!app) throw new TrellisError('not_found', 'oauth_app_not_found', `No OAuth app has the client_id ${clientId}.`);
    return app;
  }

  /** The active app behind a client_id, for the public view; disabled and deleted apps are not found. */
  findActive(em: EntityManager, clientId: string): Promise<OAuthApp | null> {
    return findActiveApp(em, clientId);
  }

  async create(em: EntityManager, input: OAuthAppInput): Promise<OAuthApp> {
    const clientId = input.client_id ?? generateClientId();
    if (!clientIdPattern.test(clientId)) throw invalid('client_id', 'must be 3 to 64 characters of A-Z a-z 0-9 - . _ ~');
    this.checkRedirectUris(input.redirect_uris);
    this.checkScopes(clientId, input.scopes);
    const now = this.clock.now();
    const app = em.create(OAuthApp, {
      id: this.ids.next(),
      clientId,
      name: input.name.trim(),
      description: input.description ?? '',
      redirectUris: unique(input.redirect_uris),
      scopes: unique(input.scopes),
      homepageUrl: input.homepage_url ?? null,
      logoUrl: input.logo_url ?? null,
      tokenEpoch: 0,
      disabledAt: null,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
    } as OAuthApp);
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw new TrellisError('conflict', 'client_id_taken', `The client_id ${clientId} is already in use (client_ids are never reused).`);
      }
      throw error;
    }
    return app;
  }

  /** Partial update. Changing scopes or redirect URIs revokes every token of the app. */
  async update(em: EntityManager, id: string, changes: OAuthAppChanges): Promise<OAuthApp> {
    const app = await this.get(em, id);
    let grantsChanged = false;
    if (changes.redirect_uris !== undefined) {
      this.checkRedirectUris(changes.redirect_uris);
      const next = unique(changes.redirect_uris);
      grantsChanged ||= !sameSet(next, app.redirectUris);
      app.redirectUris = next;
    }
    if (changes.scopes !== undefined) {
      this.checkScopes(app.clientId, changes.scopes);
      const next = unique(changes.scopes);
      grantsChanged ||= !sameSet(next, app.scopes);
      app.scopes = next;
    }
    if (changes.name !== undefined) app.name = changes.name.trim();
    if (changes.description !== undefined) app.description = changes.description;
    if (changes.homepage_url !== undefined) app.homepageUrl = changes.homepage_url;
    if (changes.logo_url !== undefined) app.logoUrl = changes.logo_url;
    app.updatedAt = this.clock.now();
    await em.flush();
    if (grantsChanged) await this.tokens.revokeApp(em, app, 'app_changed');
    return app;
  }

  /** Soft delete; every token of the app is revoked. Deleting twice answers 404. */
  async delete(em: EntityManager, id: string): Promise<void> {
    const app = await this.get(em, id);
    app.deletedAt = this.clock.now();
    app.updatedAt = app.deletedAt;
    await em.flush();
    await this.tokens.revokeApp(em, app, 'app_deleted');
  }

  /** Disables the app and revokes every token of it; disabling a disabled app changes nothing. */
  async disable(em: EntityManager, id: string): Promise<OAuthApp> {
    const app = await this.get(em, id);
    if (!app.disabledAt) {
      app.disabledAt = this.clock.now();
      app.updatedAt = app.disabledAt;
      await em.flush();
    }
    // Revoke even when already disabled: it costs nothing and leaves no doubt.
    await this.tokens.revokeApp(em, app, 'app_disabled');
    return app;
  }

  /** Enables the app again. Tokens revoked while it was disabled stay revoked. */
  async enable(em: EntityManager, id: string): Promise<OAuthApp> {
    const app = await this.get(em, id);
    if (app.disabledAt) {
      app.disabledAt = null;
      app.updatedAt = this.clock.now();
      await em.flush();
    }
    return app;
  }

  private checkRedirectUris(uris: readonly string[]): void {
    if (uris.length === 0) throw invalid('redirect_uris', 'must list at least one URI', 'invalid_redirect_uri');
    uris.forEach((uri, index) => {
      const problem = redirectUriProblem(uri);
      if (problem) throw invalid(`redirect_uris.${index}`, problem, 'invalid_redirect_uri');
    });
  }

  private checkScopes(clientId: string, scopes: readonly string[]): void {
    if (scopes.length === 0) throw invalid('scopes', 'must list at least one scope', 'unknown_scope');
    scopes.forEach((scope, index) => {
      if (!(scope in this.authorization.catalogue)) {
        throw invalid(`scopes.${index}`, `${scope} is not a scope of this server (known: ${Object.keys(this.authorization.catalogue).join(', ')})`, 'unknown_scope');
      }
      if (scope === MOBILE_FULL_SCOPE && !this.authorization.isMobileClient(clientId)) {
        throw invalid(`scopes.${index}`, `${MOBILE_FULL_SCOPE} is only for the client_ids in oauth.mobileClientIds`, 'scope_not_allowed');
      }
    });
  }
}

function invalid(field: string, message: string, code = 'validation_failed'): TrellisError {
  return new TrellisError('validation', code, `${field} ${message}.`, { details: [{ field, constraint: code, message }] });
}

const unique = (values: readonly string[]): string[] => [...new Set(values)];
const sameSet = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((value) => b.includes(value));

/**
 * 128 bits, base64url: public, but not guessable. Drawn again while it begins with `-` or `_`, so
 * that a command line never reads a client_id as an option (one draw in 32 would otherwise).
 */
export function generateClientId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (/^[A-Za-z0-9]/.test(id)) return id;
  }
}

/** The app behind a client_id unless it is disabled or deleted. */
export async function findActiveApp(em: EntityManager, clientId: string): Promise<OAuthApp | null> {
  const app = await em.findOne(OAuthApp, { clientId, deletedAt: null });
  return app && !app.disabledAt ? app : null;
}
