import type { EntityManager } from '@mikro-orm/core';
import { injectable } from 'inversify';
import type { ChannelTarget, ChannelTargetResolver } from '../../realtime/index.js';
import { Application } from '../entities/application.entity.js';
import { Hardware } from '../entities/hardware.entity.js';
import { isUuid } from '../../../kernel/crypto.js';


/**
 * The developer module's `ChannelTargetResolver`: an id in `/v3/wss/{id}` names a hardware device
 * or an application (both UUIDs from one generator, so they never collide).
 */
@injectable()
export class DeveloperChannelTargets implements ChannelTargetResolver {
  async resolve(em: EntityManager, id: string): Promise<ChannelTarget | null> {
    // PostgreSQL refuses a malformed uuid with an error: such an id names nothing.
    if (!isUuid(id)) return null;
    const hardware = await em.findOne(Hardware, { id }, { fields: ['id', 'owner'] });
    if (hardware) return { kind: 'hardware', id: hardware.id, ownerId: hardware.owner.id };
    const application = await em.findOne(Application, { id }, { fields: ['id', 'owner'] });
    if (application) return { kind: 'application', id: application.id, ownerId: application.owner.id };
    return null;
  }
}
