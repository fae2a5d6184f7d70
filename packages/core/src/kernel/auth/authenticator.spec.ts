import { describe, expect, it } from 'vitest';
import { TrellisError } from '../errors.js';
import { Authenticator, extractBearer, type CredentialVerifier } from './authenticator.js';
import type { Principal } from './principal.js';

const principal = (userId: string, credentialId: string): Principal => ({
  kind: 'api_key',
  userId,
  credentialId,
  user: { id: userId, email: 'a@b.c', name: 'a', avatarUrl: null, status: 'active', isSiteAdmin: false, isDeveloper: false, isAdministrator: false, createdAt: '', updatedAt: '' },
});

function countingVerifier(): CredentialVerifier & { calls: number } {
  return {
    kind: 'api_key',
    calls: 0,
    accepts: (token) => token.startsWith('trk_'),
    async verify(token) {
      this.calls++;
      if (token === 'trk_bad') throw new TrellisError('unauthenticated', 'invalid_token', 'no');
      return { principal: principal(token.endsWith('2') ? 'u2' : 'u1', token) };
    },
  };
}

describe('Authenticator', () => {
  it('caches verified credentials and forgets them on invalidation', async () => {
    const verifier = countingVerifier();
    const auth = new Authenticator(() => [verifier], 60_000);
    const meta = { ip: '127.0.0.1', userAgent: 'test' };
    await auth.authenticate('trk_1', meta);
    await auth.authenticate('trk_1', meta);
    expect(verifier.calls).toBe(1);
    auth.invalidateUser('u1');
    await auth.authenticate('trk_1', meta);
    expect(verifier.calls).toBe(2);
    await auth.authenticate('trk_2', meta);
    auth.invalidateWhere((p) => p.credentialId === 'trk_2');
    await auth.authenticate('trk_2', meta);
    expect(verifier.calls).toBe(4);
  });

  it('does not cache when the TTL is 0, and never caches failures', async () => {
    const verifier = countingVerifier();
    const auth = new Authenticator(() => [verifier], 0);
    const meta = { ip: '', userAgent: '' };
    await auth.authenticate('trk_1', meta);
    await auth.authenticate('trk_1', meta);
    await expect(auth.authenticate('trk_bad', meta)).rejects.toMatchObject({ code: 'invalid_token' });
    await expect(auth.authenticate('trk_bad', meta)).rejects.toMatchObject({ code: 'invalid_token' });
    expect(verifier.calls).toBe(4);
  });

  it('refuses tokens no verifier accepts', async () => {
    const auth = new Authenticator(() => [countingVerifier()], 1000);
    await expect(auth.authenticate('zzz', { ip: '', userAgent: '' })).rejects.toMatchObject({ status: 401, code: 'invalid_token' });
  });

  it('bounds the cache size', async () => {
    const verifier = countingVerifier();
    const auth = new Authenticator(() => [verifier], 60_000, 2);
    const meta = { ip: '', userAgent: '' };
    for (const token of ['trk_a', 'trk_b', 'trk_c']) await auth.authenticate(token, meta);
    await auth.authenticate('trk_a', meta); // evicted as the oldest
    expect(verifier.calls).toBe(4);
  });
});

describe('extractBearer', () => {
  it('reads Bearer tokens and X-API-Key, and refuses other schemes', () => {
    expect(extractBearer({ authorization: 'Bearer abc' })).toBe('abc');
    expect(extractBearer({ authorization: 'bearer   abc  ' })).toBe('abc');
    expect(extractBearer({ 'x-api-key': 'trk_x' })).toBe('trk_x');
    expect(extractBearer({})).toBeNull();
    expect(() => extractBearer({ authorization: 'Basic abc' })).toThrow(TrellisError);
    expect(() => extractBearer({ authorization: 'Bearer a b' })).toThrow(TrellisError);
  });
});
