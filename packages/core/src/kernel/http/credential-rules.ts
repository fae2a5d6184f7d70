import type { CredentialKind } from '../auth/principal.js';

/** A route's `auth`: public, a credential of these kinds required, or optional with these kinds. */
export type RouteAuth = 'none' | readonly CredentialKind[] | { readonly optional: readonly CredentialKind[] };

/** The three kinds of route `auth` makes. */
export type CredentialRuleName = 'none' | 'required' | 'optional';

/** What a request carries, as far as its credential goes. */
export type CredentialCase = 'absent' | 'invalid' | 'otherKind' | 'scopeShort' | 'accepted';

/**
 * What the edge does: `anonymous` runs the request without a principal; `principal` runs it as the
 * credential's user; `setAside` runs it as anonymous and keeps the refusal for where a credential
 * is needed (`RequestContext.credentialRefusal`); an error code answers with that error.
 */
export type CredentialOutcome = 'anonymous' | 'principal' | 'setAside' | 'missing_credentials' | 'invalid_token' | 'credential_not_allowed' | 'insufficient_scope';

/** One row of `credentialRules`: a bad token is either ignored or refused by the authenticator (401). */
export type CredentialRow = Readonly<Record<Exclude<CredentialCase, 'invalid'>, Exclude<CredentialOutcome, 'invalid_token'>> & { invalid: 'anonymous' | 'invalid_token' }>;

/**
 * The one table of credential rules, for every route and transport that goes through the
 * dispatcher; docs/http/README.md ("Credentials") shows the same table, and a test holds the two
 * together. Permissions and `refuseImpersonation` apply to an accepted credential on top of it.
 */
export const credentialRules: Readonly<Record<CredentialRuleName, CredentialRow>> = {
  none: { absent: 'anonymous', invalid: 'anonymous', otherKind: 'anonymous', scopeShort: 'anonymous', accepted: 'anonymous' },
  required: { absent: 'missing_credentials', invalid: 'invalid_token', otherKind: 'credential_not_allowed', scopeShort: 'insufficient_scope', accepted: 'principal' },
  optional: { absent: 'anonymous', invalid: 'invalid_token', otherKind: 'credential_not_allowed', scopeShort: 'setAside', accepted: 'principal' },
};

/** A route's credential rule in one shape: its row of `credentialRules` and the kinds it accepts. */
export function credentialRule(auth: RouteAuth): { name: CredentialRuleName; required: boolean; kinds: readonly CredentialKind[] } | null {
  if (auth === 'none') return null;
  if ('optional' in auth) return { name: 'optional', required: false, kinds: auth.optional };
  return { name: 'required', required: true, kinds: auth };
}
