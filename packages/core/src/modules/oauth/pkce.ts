import { createHash } from 'node:crypto';
import { safeEqual } from '../../kernel/crypto.js';

/** RFC 7636 §4.1: code-verifier = 43*128unreserved (A-Z a-z 0-9 - . _ ~). */
const codeVerifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The spec: a base64url code_challenge of 43 to 128 characters (RFC 7636 §4.2, RFC 4648 §5). */
const codeChallengePattern = /^[A-Za-z0-9_-]{43,128}$/;

export const isCodeVerifier = (value: string): boolean => codeVerifierPattern.test(value);
export const isCodeChallenge = (value: string): boolean => codeChallengePattern.test(value);

/** RFC 7636 §4.2: code_challenge = BASE64URL-ENCODE(SHA256(ASCII(code_verifier))). */
export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** RFC 7636 §4.6: the verifier matches the stored S256 challenge (constant-time comparison). */
export function verifyS256(verifier: string, challenge: string): boolean {
  return safeEqual(s256Challenge(verifier), challenge);
}
