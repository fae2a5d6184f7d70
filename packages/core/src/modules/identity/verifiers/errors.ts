import { TrellisError } from '../../../kernel/errors.js';

const challenge = { 'www-authenticate': 'Bearer error="invalid_token"' };

export const unknownOrDisabledUser = () =>
  new TrellisError('unauthenticated', 'invalid_token', 'The token belongs to no active user.', { headers: challenge });

export const unknownCredential = () =>
  new TrellisError('unauthenticated', 'invalid_token', 'The token is unknown, expired or revoked.', { headers: challenge });

export const sessionEnded = () =>
  new TrellisError('unauthenticated', 'invalid_token', 'The session ended when the password changed; log in again.', { headers: challenge });

export const impersonationEnded = () =>
  new TrellisError('unauthenticated', 'invalid_token', 'The administrator who obtained this token (become) is disabled or no longer an administrator.', { headers: challenge });
