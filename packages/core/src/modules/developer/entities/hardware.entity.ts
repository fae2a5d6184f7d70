import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/**
 * Lifecycle of a device: `pending` until it first reports over its channel, `active` once it has,
 * `resetting` after an administrator sent a reset until it reports again.
 */
export type HardwareStatus = 'pending' | 'active' | 'resetting';
export const hardwareStatuses: readonly HardwareStatus[] = ['pending', 'active', 'resetting'];

/** A hardware device registered by a developer. It connects to `/v3/wss/{id}` with its device token. */
export class Hardware {
  id!: string;
  owner!: User;
  name!: string;
  description!: string | null;
  config!: Record<string, unknown>;
  status!: HardwareStatus;
  /** When the device last sent a message over its channel. */
  lastSeenAt!: Date | null;
  /** SIM information the device last reported (a `status` message of type `sim`, or a `sim` log). */
  simReported!: Record<string, unknown> | null;
  simReportedAt!: Date | null;
  /** SIM information adopted by the last `sync_sim`, and when. */
  sim!: Record<string, unknown> | null;
  simSyncedAt!: Date | null;
  /** SHA-256 of the device token (`tdv_`); null when none is issued. */
  tokenHash!: string | null;
  tokenPrefix!: string | null;
  tokenIssuedAt!: Date | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export const HardwareSchema = new EntitySchema<Hardware>({
  class: Hardware,
  tableName: 'hardware_devices',
  indexes: [{ properties: ['owner', 'createdAt'] }, { properties: ['status'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    description: { type: 'text', nullable: true },
    config: { type: 'json' },
    status: { type: 'string', length: 16, default: 'pending' },
    lastSeenAt: { type: 'datetime', nullable: true },
    simReported: { type: 'json', nullable: true },
    simReportedAt: { type: 'datetime', nullable: true },
    sim: { type: 'json', nullable: true },
    simSyncedAt: { type: 'datetime', nullable: true },
    tokenHash: { type: 'string', length: 64, nullable: true, unique: true },
    tokenPrefix: { type: 'string', length: 16, nullable: true },
    tokenIssuedAt: { type: 'datetime', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
