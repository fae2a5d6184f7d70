import { describe, expect, it } from 'vitest';
import { TrellisError } from '../errors.js';
import { Authenticator, type CredentialVerifier } from './authenticator.js';
import type { Principal } from './principal.js';

const principal = (userId: string): Principal => ({
  kind: 'api_key',
  userId,
  credentialId: userId,
  user: { id: userId, email: 'a@b.c', name: 'a', avatarUrl: null, status: 'active', isSiteAdmin: false, isDeveloper: false, isAdministrator: false, createdAt: '', updatedAt: '' },
});

/** A verifier whose verifications finish only when the test says so. */
function gatedVerifier() {
  const gates: Array<() => void> = [];
  const verifier: CredentialVerifier & { calls: number } = {
    kind: 'api_key',
    calls: 0,
    accepts: (token) => token.startsWith('trk_'),
    async verify(token) {
      verifier.calls++;
      await new Promise<void>((resolve) => gates.push(resolve));
      if (token === 'trk_bad') throw new TrellisError('unauthenticated', 'invalid_token', 'no');
      return { principal: principal(token.slice(4)) };
    },
  };
  const open = async () => {
    while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve));
    for (const gate of gates.splice(0)) gate();
  };
  return { verifier, open };
}

const meta = { ip: '', userAgent: '' };

describe('Authenticator: concurrent verifications', () => {
  it('verifies a credential once for all the requests in flight with it', async () => {
    const { verifier, open } = gatedVerifier();
    const auth = new Authenticator(() => [verifier], 60_000);
    const all = Promise.all(Array.from({ length: 20 }, () => auth.authenticate('trk_u1', meta)));
    await open();
    const principals = await all;
    expect(verifier.calls).toBe(1);
    expect(new Set(principals.map((p) => p.userId))).toEqual(new Set(['u1']));
    // Cached afterwards.
    await auth.authenticate('trk_u1', meta);
    expect(verifier.calls).toBe(1);
  });

  it('shares a failure with every waiter and caches nothing', async () => {
    const { verifier, open } = gatedVerifier();
    const auth = new Authenticator(() => [verifier], 60_000);
    const all = Promise.allSettled([auth.authenticate('trk_bad', meta), auth.authenticate('trk_bad', meta)]);
    await open();
    const results = await all;
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(verifier.calls).toBe(1);
    const again = auth.authenticate('trk_bad', meta);
    await open();
    await expect(again).rejects.toMatchObject({ code: 'invalid_token' });
    expect(verifier.calls).toBe(2);
  });

  it('does not cache or share a verification an invalidation overtook', async () => {
    const { verifier, open } = gatedVerifier();
    const auth = new Authenticator(() => [verifier], 60_000);
    const before = auth.authenticate('trk_u1', meta);
    await new Promise((resolve) => setImmediate(resolve));
    auth.invalidateUser('u1');
    // A request after the invalidation does not join the older verification.
    const after = auth.authenticate('trk_u1', meta);
    await open();
    await Promise.all([before, after]);
    expect(verifier.calls).toBe(2);
    // The newer verification was kept.
    await auth.authenticate('trk_u1', meta);
    expect(verifier.calls).toBe(2);
  });

  it('verifies every request when the cache is off (TTL 0)', async () => {
    const { verifier, open } = gatedVerifier();
    const auth = new Authenticator(() => [verifier], 0);
    const all = Promise.all([auth.authenticate('trk_u1', meta), auth.authenticate('trk_u1', meta)]);
    await open();
    await all;
    expect(verifier.calls).toBe(2);
  });
});
