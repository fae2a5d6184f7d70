import type { EntityManager } from '@mikro-orm/core';
import type { OAuthApp } from '../../entities/oauth-app.entity.js';

/** Parameters of an authorization request, with empty values already treated as omitted. */
export interface AuthorizationParams {
  response_type?: string;
  client_id?: string;
  redirect_uri?: string;
  scope?: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  prompt?: string;
  login_hint?: string;
  display?: string;
}

export type PromptValue = 'login' | 'consent' | 'select_account' | 'none';

/**
 * An authorization request as the checks see it. Each check reads its parameters and records
 * what it established; later checks rely on earlier ones (the order is the table in `index.ts`).
 */
export interface AuthorizationRequest {
  readonly params: AuthorizationParams;
  /** The active app named by client_id (set by `checkClient`). */
  app?: OAuthApp;
  /**
   * The registered redirect URI the request named (set by `checkRedirectUri`). From then on an
   * error can be sent back to the client instead of shown to the user (RFC 6749 §4.1.2.1).
   */
  redirectUri?: string;
  /** A well-formed state, echoed in every answer (set by `checkState`). */
  state?: string;
  /** The granted scopes (set by `checkScope`). */
  scopes?: string[];
  /** The S256 challenge (set by `checkCodeChallenge`). */
  codeChallenge?: string;
  prompt: Set<PromptValue>;
  display?: 'popup';
  loginHint?: string;
}

export interface AuthorizationCheckContext {
  em: EntityManager;
  /** Every scope an app may hold, with its description. */
  catalogue: Readonly<Record<string, string>>;
  /** client_ids that may hold mobile:full. */
  mobileClientIds: ReadonlySet<string>;
}

/** One rule of the authorization endpoint. It throws an `OAuthError` when the request breaks it. */
export interface AuthorizationCheck {
  readonly name: string;
  /** The RFC section (or spec table) the rule comes from. */
  readonly rule: string;
  run(request: AuthorizationRequest, ctx: AuthorizationCheckContext): void | Promise<void>;
}

export const newAuthorizationRequest = (params: AuthorizationParams): AuthorizationRequest => ({ params, prompt: new Set() });
