import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { HardwareLog } from '../entities/hardware-log.entity.js';
import { Hardware } from '../entities/hardware.entity.js';
import { inTransaction } from '../../../kernel/transaction.js';

export interface LogWindow {
  start?: Date;
  end?: Date;
}

/** Log type whose JSON-object content records the SIM information a device reports. */
export const SIM_LOG_TYPE = 'sim';

const hardwareNotFound = (id: string) => new TrellisError('not_found', 'hardware_not_found', `No hardware device of yours has the id ${id}.`);

/** Hardware logs: appended by the owner over HTTP or by the device over its channel, read newest first. */
@injectable()
export class HardwareLogService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  /** The device, checked to belong to `ownerId` (a missing and a foreign device both answer 404). */
  async requireOwned(em: EntityManager, ownerId: string, hardwareId: string): Promise<void> {
    if (!(await em.count(Hardware, { id: hardwareId, owner: ownerId }))) throw hardwareNotFound(hardwareId);
  }

  async list(em: EntityManager, hardwareId: string, window: LogWindow, page: Paging): Promise<{ items: HardwareLog[]; total: number }> {
    if (window.start && window.end && window.start.getTime() > window.end.getTime()) {
      throw new TrellisError('validation', 'invalid_time_range', 'start_time must not be after end_time.', {
        details: [{ field: 'start_time', constraint: 'beforeEndTime', message: 'must not be after end_time' }],
      });
    }
    const createdAt: Record<string, Date> = {};
    if (window.start) createdAt.$gte = window.start;
    if (window.end) createdAt.$lte = window.end;
    const where: FilterQuery<HardwareLog> = { hardware: hardwareId, ...(window.start || window.end ? { createdAt } : {}) };
    const [items, total] = await em.findAndCount(HardwareLog, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
    });
    return { items, total };
  }

  /**
   * Appends an entry and notes on the device what it tells: a `sim` entry holding a JSON object
   * becomes the device's reported SIM information. Runs in one transaction.
   */
  async append(em: EntityManager, hardwareId: string, type: string, content: string, options: { seen?: boolean } = {}): Promise<HardwareLog> {
    const now = this.clock.now();
    return inTransaction(em, async (tx) => {
      const changes: Partial<Hardware> = {};
      if (options.seen) {
        changes.lastSeenAt = now;
        changes.status = 'active';
      }
      if (type === SIM_LOG_TYPE) {
        const sim = parseObject(content);
        if (sim) {
          changes.simReported = sim;
          changes.simReportedAt = now;
        }
      }
      if (Object.keys(changes).length > 0) {
        if ((await tx.nativeUpdate(Hardware, { id: hardwareId }, changes)) === 0) throw hardwareNotFound(hardwareId);
      } else if (!(await tx.count(Hardware, { id: hardwareId }))) {
        throw hardwareNotFound(hardwareId);
      }
      const log = tx.create(HardwareLog, {
        id: this.ids.next(),
        hardware: tx.getReference(Hardware, hardwareId),
        type,
        content,
        createdAt: now,
      } as HardwareLog);
      await tx.flush();
      return log;
    });
  }
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
