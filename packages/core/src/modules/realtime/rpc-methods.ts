import { TrellisError } from '../../kernel/errors.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import type { RpcContext, RpcMethodDefinition } from '../../kernel/module.js';
import { hardwareMessageSinkServiceIdentifier, type HardwareMessage, type HardwareSensorParams } from './channel-targets.js';
import { HardwareSensorDto, HardwareStatusDto } from './dto/hardware-messages.dto.js';
import type { RealtimeSessionInfo } from './session/realtime-session.js';

async function record(ctx: RpcContext & { session: unknown }, message: HardwareMessage): Promise<{ recorded: true }> {
  const session = ctx.session as RealtimeSessionInfo;
  const container = ctx.get(kernelServiceIdentifier).container;
  if (!container.isBound(hardwareMessageSinkServiceIdentifier)) {
    throw new TrellisError('unavailable', 'hardware_logs_unavailable', 'This server stores no hardware logs: no HardwareMessageSink is bound (load the developer module).');
  }
  await container.get(hardwareMessageSinkServiceIdentifier).record(ctx.em, session.targetId, message);
  return { recorded: true };
}

/**
 * What a hardware client sends on its channel: `status` and `sensor`, validated and stored as
 * hardware logs through the `HardwareMessageSink`. Sent as requests they answer
 * `{ recorded: true }`; sent as notifications they answer nothing.
 */
export const hardwareRpcMethods: readonly RpcMethodDefinition[] = [
  {
    channels: ['hardware'],
    method: 'status',
    params: HardwareStatusDto,
    handler: (params, ctx) => {
      const { type, data } = params as HardwareStatusDto;
      return record(ctx, { method: 'status', params: { type, data: definedOnly({ ...data }) } });
    },
  },
  {
    channels: ['hardware'],
    method: 'sensor',
    params: HardwareSensorDto,
    handler: (params, ctx) => {
      const { sensorId, type, value, unit } = params as HardwareSensorDto;
      return record(ctx, { method: 'sensor', params: definedOnly<HardwareSensorParams>({ sensorId, type, value, unit }) });
    },
  },
];

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
