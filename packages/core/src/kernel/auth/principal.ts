/**
 * How the caller proved who they are. Told apart by the shape of the bearer token. `device` is a
 * hardware device's or application's own token (`tdv_`), issued by its developer.
 */
export type CredentialKind = 'jwt' | 'api_key' | 'agent_token' | 'oauth' | 'anonymous' | 'device';

export const allCredentialKinds: readonly CredentialKind[] = ['jwt', 'api_key', 'agent_token', 'oauth', 'anonymous', 'device'];

/** The hardware device or application a `device` credential was issued to. */
export interface PrincipalDevice {
  kind: 'hardware' | 'application';
  id: string;
}

/** A snapshot of the user behind a credential, taken when the credential was verified. */
export interface PrincipalUser {
  id: string;
  email: string;
  name: string;
  avatarUrl: string | null;
  status: 'active' | 'disabled';
  isSiteAdmin: boolean;
  isDeveloper: boolean;
  isAdministrator: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Principal {
  kind: CredentialKind;
  userId: string;
  user: PrincipalUser;
  /** Scopes the credential is limited to; `undefined` means the user's full authority. */
  scopes?: readonly string[];
  /** The stored credential's id (API key, agent token, OAuth token) or the JWT's `jti`. */
  credentialId?: string;
  /** OAuth client the token was issued to. */
  clientId?: string;
  /** When an administrator acts as this user (`become`): the administrator's user id (RFC 8693 `act`). */
  actorId?: string;
  /** For `device` credentials: the device the token belongs to (`userId` is its owner). */
  device?: PrincipalDevice;
  /** When the credential expires (epoch ms), for credentials that do; long-lived sockets check it. */
  expiresAtMs?: number;
}

/**
 * Named permissions a route may require. `site:admin` is the site administrator flag (OAuth app
 * administration); `developer` and `administrator` guard the developer and administrator APIs.
 */
export type Permission = 'site:admin' | 'developer' | 'administrator';

export function hasPermission(principal: Principal, permission: Permission): boolean {
  const { user } = principal;
  switch (permission) {
    case 'site:admin':
      return user.isSiteAdmin;
    case 'developer':
      return user.isDeveloper || user.isSiteAdmin;
    case 'administrator':
      return user.isAdministrator || user.isSiteAdmin;
  }
}
