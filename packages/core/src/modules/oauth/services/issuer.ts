import type { TrellisConfig } from '../../../kernel/config/config.js';

/**
 * The issuer identifier (RFC 8414 §2), pinned: `publicUrl` when configured, otherwise the URL the
 * host listens on (`servedUrl`, set at start), otherwise `server.host:server.port` and the base
 * path. Never a request header: a `Host` or `X-Forwarded-Host` a client writes cannot move the
 * issuer or the consent redirect. Set `publicUrl` whenever clients reach Trellis at another address.
 */
export function issuerOf(config: TrellisConfig, servedUrl: string | undefined): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  if (servedUrl) return servedUrl.replace(/\/+$/, '');
  return `http://${config.server.host}:${config.server.port}${config.server.basePath}`;
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
