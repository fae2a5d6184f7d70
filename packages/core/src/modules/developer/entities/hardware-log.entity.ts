import { EntitySchema } from '@mikro-orm/core';
import { Hardware } from './hardware.entity.js';

/** One log entry of a device (spec: type, content). Deleted with its device. */
export class HardwareLog {
  id!: string;
  hardware!: Hardware;
  type!: string;
  content!: string;
  createdAt!: Date;
}

export const HardwareLogSchema = new EntitySchema<HardwareLog>({
  class: HardwareLog,
  tableName: 'hardware_logs',
  indexes: [{ properties: ['hardware', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    hardware: { kind: 'm:1', entity: () => Hardware, deleteRule: 'cascade' },
    type: { type: 'string', length: 64 },
    content: { type: 'text' },
    createdAt: { type: 'datetime' },
  },
});
