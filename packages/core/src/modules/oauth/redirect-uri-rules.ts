const loopbackHosts = new Set(['127.0.0.1', '[::1]', 'localhost']);
const forbiddenSchemes = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'filesystem', 'ws', 'wss', 'ftp']);

/**
 * Why a redirect URI cannot be registered, or null when it can. Registration is where the rules
 * live; at request time the comparison is exact string equality.
 *
 * - absolute, no fragment (RFC 6749 §3.1.2), no user information;
 * - https; http only on a loopback host for native apps (RFC 8252 §7.3, §8.3; RFC 6749 §3.1.2.1);
 * - or a private-use scheme named after a reverse domain (RFC 8252 §7.1), for native apps;
 * - never a scheme that runs or reads something locally (javascript:, data:, file:, ...).
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URI';
  }
  if (uri.includes('#')) return 'must not contain a fragment (RFC 6749 §3.1.2)';
  if (/\s/.test(uri)) return 'must not contain white space';
  if (url.username || url.password) return 'must not contain user information';
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (scheme === 'https') return url.hostname ? null : 'needs a host';
  if (scheme === 'http') {
    return loopbackHosts.has(url.hostname) ? null : 'may use http only on a loopback host (127.0.0.1, [::1], localhost); use https (RFC 8252 §8.3)';
  }
  if (forbiddenSchemes.has(scheme)) return `may not use the ${scheme}: scheme`;
  if (!scheme.includes('.')) return 'a private-use scheme must be a reverse domain name such as com.example.app (RFC 8252 §7.1)';
  return null;
}
