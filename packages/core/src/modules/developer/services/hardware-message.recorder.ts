import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { HardwareMessage, HardwareMessageSink } from '../../realtime/index.js';
import { HardwareLogService, SIM_LOG_TYPE } from './hardware-log.service.js';

/**
 * The developer module's `HardwareMessageSink`: what a device sends on its channel becomes a
 * hardware log entry (type `status` or `sensor`, content the JSON of the params), and marks the
 * device as seen (`active`, `lastSeenAt`). A `status` message of type `sim` is logged as a `sim`
 * entry, so its `data` becomes the device's reported SIM information.
 */
@injectable()
export class HardwareMessageRecorder implements HardwareMessageSink {
  constructor(@inject(HardwareLogService) private readonly logs: HardwareLogService) {}

  async record(em: EntityManager, hdId: string, message: HardwareMessage): Promise<void> {
    if (message.method === 'status' && message.params.type === SIM_LOG_TYPE) {
      await this.logs.append(em, hdId, SIM_LOG_TYPE, JSON.stringify(message.params.data), { seen: true });
      return;
    }
    await this.logs.append(em, hdId, message.method, JSON.stringify(message.params), { seen: true });
  }
}
