/** The scopes named by the spec, with the text the consent page shows. */
export const builtInScopes: Readonly<Record<string, string>> = Object.freeze({
  'profile:read': 'Read your name, email address, avatar and administrator status.',
  'chat:completions': 'Send messages to AI models on your behalf.',
  'mobile:full': 'Full access to your account from the official mobile app.',
  'mcp:tools': 'List and call, as an AI agent\'s tools (MCP), the deployed blocks you may run.',
});

/** The scope only the configured production and sandbox native apps may hold. */
export const MOBILE_FULL_SCOPE = 'mobile:full';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const scopeToken = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

export function isScopeToken(value: string): boolean {
  return scopeToken.test(value);
}

/**
 * Splits a space-delimited scope parameter into distinct tokens, in first-seen order; `null` when
 * a token breaks the RFC 6749 §3.3 syntax.
 */
export function parseScope(value: string): string[] | null {
  const tokens = value.split(' ').filter((token) => token.length > 0);
  if (!tokens.every(isScopeToken)) return null;
  return [...new Set(tokens)];
}

/** Every scope an app may be given: the built-in ones plus `oauth.extraScopes`. */
export function scopeCatalogue(extra: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return { ...builtInScopes, ...extra };
}
