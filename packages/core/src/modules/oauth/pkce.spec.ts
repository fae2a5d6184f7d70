import { describe, expect, it } from 'vitest';
import { isCodeChallenge, isCodeVerifier, s256Challenge, verifyS256 } from './pkce.js';

describe('PKCE (RFC 7636)', () => {
  // RFC 7636 Appendix B: the example verifier and its S256 challenge.
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  it('derives the Appendix B challenge from the Appendix B verifier', () => {
    expect(s256Challenge(verifier)).toBe(challenge);
    expect(verifyS256(verifier, challenge)).toBe(true);
  });

  it('refuses a verifier that differs in one character', () => {
    expect(verifyS256(`${verifier.slice(0, -1)}l`, challenge)).toBe(false);
    expect(verifyS256(verifier, `${challenge.slice(0, -1)}N`)).toBe(false);
  });

  it('accepts verifiers of 43 to 128 unreserved characters only (§4.1)', () => {
    expect(isCodeVerifier('a'.repeat(43))).toBe(true);
    expect(isCodeVerifier('a'.repeat(128))).toBe(true);
    expect(isCodeVerifier('A-._~'.repeat(9))).toBe(true);
    expect(isCodeVerifier('a'.repeat(42))).toBe(false);
    expect(isCodeVerifier('a'.repeat(129))).toBe(false);
    expect(isCodeVerifier(`${'a'.repeat(42)}+`)).toBe(false);
    expect(isCodeVerifier(`${'a'.repeat(42)}=`)).toBe(false);
  });

  it('accepts base64url challenges of 43 to 128 characters only', () => {
    expect(isCodeChallenge(challenge)).toBe(true);
    expect(isCodeChallenge('a'.repeat(42))).toBe(false);
    expect(isCodeChallenge('a'.repeat(129))).toBe(false);
    expect(isCodeChallenge(`${'a'.repeat(42)}.`)).toBe(false);
    expect(isCodeChallenge(`${'a'.repeat(42)}/`)).toBe(false);
  });
});
