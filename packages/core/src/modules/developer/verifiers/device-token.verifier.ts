import type { MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { CredentialMeta, CredentialVerifier } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import { ormServiceIdentifier } from '../../../kernel/tokens.js';
import { toPrincipalUser } from '../../identity/index.js';
import { DeviceTokenService, deviceTokenPrefix } from '../services/device-token.service.js';

const invalid = () =>
  new TrellisError('unauthenticated', 'invalid_token', 'The device token is unknown or was replaced, or its owner is disabled.', {
    headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
  });

/**
 * Device tokens (`tdv_`). The principal is the device's owner (`userId`, `user`) with `device`
 * naming the hardware device or application; `credentialId` is the device id. HTTP routes do not
 * list the `device` kind, so these tokens open the device's own WebSocket channel and nothing else.
 */
@injectable()
export class DeviceTokenVerifier implements CredentialVerifier {
  readonly kind = 'device' as const;

  constructor(
    @inject(DeviceTokenService) private readonly tokens: DeviceTokenService,
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
  ) {}

  accepts(token: string): boolean {
    return token.startsWith(deviceTokenPrefix);
  }

  async verify(token: string, _meta: CredentialMeta): Promise<{ principal: Principal }> {
    const found = await this.tokens.find(this.orm.em.fork(), token);
    if (!found || found.device.owner.status !== 'active') throw invalid();
    const { kind, device } = found;
    return {
      principal: {
        kind: 'device',
        userId: device.owner.id,
        user: toPrincipalUser(device.owner),
        credentialId: device.id,
        device: { kind, id: device.id },
      },
    };
  }
}
