import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';

/**
 * What an id in `/v3/wss/{id}` names: an application or a hardware device, and who owns it.
 * The realtime module owns neither entity; the module that does (developer) tells it.
 */
export interface ChannelTarget {
  kind: 'application' | 'hardware';
  id: string;
  /** User id of the owner. A socket may attach to the target only with a credential of this user. */
  ownerId: string;
}

/**
 * Port: looks up the id of a shared channel path `/v3/wss/{id}`. Applications and hardware devices
 * share one path and one id space (UUIDs), so the realtime module asks this resolver which of the
 * two an id names. `null` means "no such application or device" (the upgrade is refused with 404).
 *
 * Bound by the module that owns applications and devices. When nothing is bound, the application
 * and hardware channels refuse every upgrade with 503 `realtime_targets_unavailable`; the user
 * channel still works.
 *
 * `em` is a fresh unit of work of the caller; the resolver must not flush it.
 */
export interface ChannelTargetResolver {
  resolve(em: EntityManager, id: string): Promise<ChannelTarget | null>;
}

export const channelTargetResolverServiceIdentifier: ServiceIdentifier<ChannelTargetResolver> = Symbol.for(
  '@trellis/core/ChannelTargetResolver',
);

/** `status` from a hardware client (validated before the sink sees it). */
export interface HardwareStatusParams {
  type: string;
  data: { cpu?: number; memory?: number; temperature?: number; [key: string]: unknown };
}

/** `sensor` from a hardware client (validated before the sink sees it). */
export interface HardwareSensorParams {
  sensorId: string;
  type: string;
  value: number | string | boolean;
  unit?: string;
}

/** A message a hardware client sent on its channel, already validated. */
export type HardwareMessage = { method: 'status'; params: HardwareStatusParams } | { method: 'sensor'; params: HardwareSensorParams };

/**
 * Port: stores what a hardware device reports over its WebSocket (`status`, `sensor`) as hardware
 * logs. Bound by the module that owns hardware logs (developer). `em` is a fresh unit of work
 * opened for this message; the sink persists (flushes) its own writes. Throw a `TrellisError` to
 * answer the device with the matching JSON-RPC error; anything else answers -32603.
 *
 * When nothing is bound, `status` and `sensor` answer -32603 `hardware_logs_unavailable`.
 */
export interface HardwareMessageSink {
  record(em: EntityManager, hdId: string, message: HardwareMessage): Promise<void>;
}

export const hardwareMessageSinkServiceIdentifier: ServiceIdentifier<HardwareMessageSink> = Symbol.for(
  '@trellis/core/HardwareMessageSink',
);
