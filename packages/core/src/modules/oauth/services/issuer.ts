import type { TrellisConfig } from '../../../kernel/config/config.js';

const hostPattern = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * The issuer identifier (RFC 8414 §2): `publicUrl` when configured, otherwise the scheme and host
 * the request came to, plus the base path. Set `publicUrl` in production so it never depends on
 * request headers.
 */
export function issuerOf(config: TrellisConfig, headers: Readonly<Record<string, string>>): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const trust = config.server.trustProxy;
  const forwardedProto = trust ? headers['x-forwarded-proto']?.split(',')[0]?.trim() : undefined;
  const proto = forwardedProto === 'https' || forwardedProto === 'http' ? forwardedProto : 'http';
  const forwardedHost = trust ? headers['x-forwarded-host']?.split(',')[0]?.trim() : undefined;
  const candidate = forwardedHost ?? headers['host'];
  const host = candidate && hostPattern.test(candidate) ? candidate : `${config.server.host}:${config.server.port}`;
  return `${proto}://${host}${config.server.basePath}`;
}

/**
 * Adds query parameters to a redirect URI exactly as registered, keeping any query it already has
 * (RFC 6749 §3.1.2); the URI itself is not re-serialised.
 */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.append(name, value);
  const text = query.toString();
  if (!text) return uri;
  return `${uri}${uri.includes('?') ? (uri.endsWith('?') || uri.endsWith('&') ? '' : '&') : '?'}${text}`;
}
