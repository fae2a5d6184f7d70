import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { AuditService } from '../../audit/index.js';
import { HardwareLog, Hardware, type HardwareStatus, devResources, type DevInput } from '../../developer/index.js';
import { PushService } from '../../realtime/index.js';
import type { Acting } from './admin-user.service.js';
import { inTransaction } from '../../../kernel/transaction.js';

const notFound = (id: string) => new TrellisError('not_found', 'hardware_not_found', `No hardware device has the id ${id}.`);

/** Every developer's hardware devices, as administrators manage them. */
@injectable()
export class AdminHardwareService {
  constructor(
    @inject(AuditService) private readonly audit: AuditService,
    @inject(PushService) private readonly push: PushService,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
  ) {}

  async list(em: EntityManager, filter: { status?: HardwareStatus }, page: Paging): Promise<{ items: Hardware[]; total: number }> {
    const where: FilterQuery<Hardware> = filter.status ? { status: filter.status } : {};
    const [items, total] = await em.findAndCount(Hardware, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
    });
    return { items, total };
  }

  private async get(em: EntityManager, id: string): Promise<Hardware> {
    const hardware = await em.findOne(Hardware, { id });
    if (!hardware) throw notFound(id);
    return hardware;
  }

  async update(em: EntityManager, id: string, input: DevInput, acting: Acting): Promise<Hardware> {
    return inTransaction(em, async (tx) => {
      const hardware = await this.get(tx, id);
      devResources.hardware.apply(hardware, input);
      await this.record(tx, acting, 'admin.hardware.update', id, { fields: Object.keys(input).sort() });
      await tx.flush();
      return hardware;
    });
  }

  /**
   * Without a carrier integration, synchronising adopts the SIM information the device itself last
   * reported (a `status` message of type `sim` on its channel, or a `sim` log entry) as the synced
   * record, stamped with the time. A device that reported none answers 409 `sim_not_reported`.
   */
  async syncSim(em: EntityManager, id: string, acting: Acting): Promise<Hardware> {
    return inTransaction(em, async (tx) => {
      const hardware = await this.get(tx, id);
      if (!hardware.simReported) {
        throw new TrellisError('conflict', 'sim_not_reported', 'The device has not reported SIM information yet (a status message of type "sim", or a "sim" log entry).');
      }
      hardware.sim = { ...hardware.simReported };
      hardware.simSyncedAt = this.clock.now();
      await this.record(tx, acting, 'admin.hardware.sync_sim', id, { reportedAt: hardware.simReportedAt?.toISOString() ?? null });
      await tx.flush();
      return hardware;
    });
  }

  /**
   * Sends the device a `control` notification `{ command: 'reset', target: 'device', params: { mode } }`
   * over its channel, marks it `resetting` until it reports again, and logs and audits the reset.
   * The push is the last step of the transaction: when it cannot be handed to the PubSub backend,
   * nothing is recorded.
   */
  async reset(em: EntityManager, id: string, mode: string, acting: Acting): Promise<{ hardware: Hardware; control: Record<string, unknown> }> {
    const control = { command: 'reset', target: 'device', params: { mode } };
    const hardware = await inTransaction(em, async (tx) => {
      const hardware = await this.get(tx, id);
      hardware.status = 'resetting';
      tx.create(HardwareLog, {
        id: this.ids.next(),
        hardware,
        type: 'control',
        content: JSON.stringify(control),
        createdAt: this.clock.now(),
      } as HardwareLog);
      await this.record(tx, acting, 'admin.hardware.reset', id, { mode });
      await tx.flush();
      await this.push.toDevice(id, 'control', control);
      return hardware;
    });
    return { hardware, control };
  }

  private record(em: EntityManager, acting: Acting, action: string, id: string, data: Record<string, unknown>) {
    return this.audit.record(em, {
      principal: acting.principal,
      action,
      targetType: 'hardware',
      targetId: id,
      data,
      ip: acting.ip,
      userAgent: acting.userAgent,
    });
  }
}
