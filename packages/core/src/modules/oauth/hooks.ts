/** Lifecycle hooks of the OAuth module (declaration merging into the kernel's hook map). */
declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /** A token pair was issued (a code exchanged or a refresh token rotated). */
    'oauth.tokens_issued': { clientId: string; userId: string; tokenFamily: string; grantType: 'authorization_code' | 'refresh_token' };
    /** A used code or a rotated refresh token was presented again; its token family is revoked. */
    'oauth.token_reuse_detected': {
      kind: 'authorization_code' | 'refresh_token';
      clientId: string;
      userId: string | null;
      tokenFamily: string;
      ip: string;
      userAgent: string;
    };
    /** Every token of an app was revoked (scopes or redirect URIs changed, app disabled or deleted). */
    'oauth.app_tokens_revoked': { clientId: string; reason: 'app_changed' | 'app_disabled' | 'app_deleted' };
  }
}

export {};
