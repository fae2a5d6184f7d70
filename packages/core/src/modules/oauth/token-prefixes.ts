/** Opaque OAuth tokens carry a prefix so every credential kind is told apart by shape. */
export const ACCESS_TOKEN_PREFIX = 'toa_';
export const REFRESH_TOKEN_PREFIX = 'tor_';
