import { ContainerModule } from 'inversify';
import { credentialVerifierServiceIdentifier } from '../../kernel/auth/authenticator.js';
import { defineModule } from '../../kernel/module.js';
import { channelTargetResolverServiceIdentifier, hardwareMessageSinkServiceIdentifier } from '../realtime/index.js';
import { ApplicationSchema } from './entities/application.entity.js';
import { DeveloperTaskSchema } from './entities/developer-task.entity.js';
import { HardwareLogSchema } from './entities/hardware-log.entity.js';
import { HardwareSchema } from './entities/hardware.entity.js';
import { migrations } from './migrations/index.js';
import { developerRoutes } from './routes.js';
import { DeveloperChannelTargets } from './services/channel-target.resolver.js';
import { DeveloperResourceService } from './services/developer-resource.service.js';
import { DeviceTokenService } from './services/device-token.service.js';
import { HardwareLogService } from './services/hardware-log.service.js';
import { HardwareMessageRecorder } from './services/hardware-message.recorder.js';
import { DeviceTokenVerifier } from './verifiers/device-token.verifier.js';

/**
 * The developer API (`/dev`): hardware devices, AI models, bots, conversations, tasks, tools and
 * applications of the calling developer, hardware logs, device tokens, and the generic schema,
 * pointer and list operations. It owns hardware devices and applications, so it tells the realtime
 * module what `/v3/wss/{id}` names and stores what devices report there.
 */
export const developerModule = defineModule({
  name: 'developer',
  dependsOn: ['identity', 'bots', 'conversations', 'ai'],
  entities: [HardwareSchema, HardwareLogSchema, ApplicationSchema, DeveloperTaskSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(DeveloperResourceService).toSelf();
      bind(DeviceTokenService).toSelf();
      bind(HardwareLogService).toSelf();
      bind(HardwareMessageRecorder).toSelf();
      bind(DeveloperChannelTargets).toSelf();
      bind(channelTargetResolverServiceIdentifier).toService(DeveloperChannelTargets);
      bind(hardwareMessageSinkServiceIdentifier).toService(HardwareMessageRecorder);
      bind(credentialVerifierServiceIdentifier).to(DeviceTokenVerifier);
    }),
  routes: developerRoutes,
});
