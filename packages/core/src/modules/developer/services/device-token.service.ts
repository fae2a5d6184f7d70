import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import { generateOpaqueToken, sha256Hex } from '../../../kernel/crypto.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { authenticatorServiceIdentifier, hooksServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { Application } from '../entities/application.entity.js';
import { Hardware } from '../entities/hardware.entity.js';

/** Prefix of device tokens: the credential a hardware device or application uses on its channel. */
export const deviceTokenPrefix = 'tdv_';

export type DeviceKind = 'hardware' | 'application';

export interface IssuedDeviceToken {
  token: string;
  prefix: string;
  issuedAt: Date;
  kind: DeviceKind;
  id: string;
}

const entityOf = (kind: DeviceKind) => (kind === 'hardware' ? Hardware : Application);
const notFound = (kind: DeviceKind, id: string) =>
  kind === 'hardware'
    ? new TrellisError('not_found', 'hardware_not_found', `No hardware device of yours has the id ${id}.`)
    : new TrellisError('not_found', 'app_not_found', `No application of yours has the id ${id}.`);

/**
 * Device tokens (`tdv_...`): one per hardware device or application, issued by its owner, shown
 * once and stored only as a SHA-256 digest. Issuing again replaces (and so revokes) the previous one.
 */
@injectable()
export class DeviceTokenService {
  constructor(
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
  ) {}

  async issue(em: EntityManager, kind: DeviceKind, ownerId: string, id: string): Promise<IssuedDeviceToken> {
    const token = generateOpaqueToken(deviceTokenPrefix);
    const issuedAt = this.clock.now();
    const prefix = token.slice(0, 12);
    const updated = await em.nativeUpdate(entityOf(kind), { id, owner: ownerId }, { tokenHash: sha256Hex(token), tokenPrefix: prefix, tokenIssuedAt: issuedAt });
    if (updated === 0) throw notFound(kind, id);
    await this.forget(ownerId, id);
    return { token, prefix, issuedAt, kind, id };
  }

  async revoke(em: EntityManager, kind: DeviceKind, ownerId: string, id: string): Promise<void> {
    const updated = await em.nativeUpdate(entityOf(kind), { id, owner: ownerId }, { tokenHash: null, tokenPrefix: null, tokenIssuedAt: null });
    if (updated === 0) throw notFound(kind, id);
    await this.forget(ownerId, id);
  }

  /** The device or application a presented token belongs to, with its owner loaded, or null. */
  async find(em: EntityManager, token: string): Promise<{ kind: DeviceKind; device: Hardware | Application } | null> {
    const tokenHash = sha256Hex(token);
    const hardware = await em.findOne(Hardware, { tokenHash }, { populate: ['owner'] });
    if (hardware) return { kind: 'hardware', device: hardware };
    const application = await em.findOne(Application, { tokenHash }, { populate: ['owner'] });
    if (application) return { kind: 'application', device: application };
    return null;
  }

  /**
   * A device's token changed or the device was deleted: drop its cached principals and announce
   * the revocation (the realtime module closes sockets opened with it; a device principal's
   * credential id is the device id).
   */
  async forget(ownerId: string, id: string): Promise<void> {
    this.authenticator.invalidateWhere((principal) => principal.device?.id === id);
    await this.hooks.emit('credential.revoked', { userId: ownerId, credentialId: id });
  }
}
