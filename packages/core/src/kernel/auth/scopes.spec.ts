import { describe, expect, it } from 'vitest';
import { TrellisError } from '../errors.js';
import type { Principal } from './principal.js';
import { requireScopes, scopesAllow } from './scopes.js';

const principal = (scopes?: string[]): Principal => ({ kind: 'oauth', userId: 'u', user: {} as Principal['user'], ...(scopes ? { scopes } : {}) });
const full = ['mobile:full'];

describe('scopes', () => {
  it('lets unscoped credentials through everywhere', () => {
    expect(scopesAllow(principal(), [], full)).toBe(true);
    expect(scopesAllow(principal(), ['profile:read'], full)).toBe(true);
  });

  it('lets a scoped credential through with one listed or full-access scope only', () => {
    expect(scopesAllow(principal(['profile:read']), ['profile:read'], full)).toBe(true);
    expect(scopesAllow(principal(['chat:completions']), ['profile:read'], full)).toBe(false);
    expect(scopesAllow(principal(['chat:completions']), [], full)).toBe(false);
    expect(scopesAllow(principal(['mobile:full']), [], full)).toBe(true);
    expect(scopesAllow(principal([]), ['profile:read'], full)).toBe(false);
  });

  it('throws 403 insufficient_scope with an RFC 6750 challenge', () => {
    try {
      requireScopes(principal(['chat:completions']), ['profile:read'], full);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TrellisError);
      expect((error as TrellisError).status).toBe(403);
      expect((error as TrellisError).code).toBe('insufficient_scope');
      expect((error as TrellisError).headers?.['www-authenticate']).toBe('Bearer error="insufficient_scope", scope="profile:read mobile:full"');
    }
  });
});
