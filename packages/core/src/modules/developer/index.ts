export { developerModule } from './developer.module.js';
export { Hardware, HardwareSchema, hardwareStatuses, type HardwareStatus } from './entities/hardware.entity.js';
export { HardwareLog, HardwareLogSchema } from './entities/hardware-log.entity.js';
export { Application, ApplicationSchema } from './entities/application.entity.js';
export { DeveloperTask, DeveloperTaskSchema } from './entities/developer-task.entity.js';
export { devResources, devResourceTypes, type DevResourceDescriptor, type DevResourceType, type DevInput } from './resource-types.js';
export { DeveloperResourceService } from './services/developer-resource.service.js';
export { DeviceTokenService, deviceTokenPrefix, type DeviceKind, type IssuedDeviceToken } from './services/device-token.service.js';
export { HardwareLogService, SIM_LOG_TYPE, type LogWindow } from './services/hardware-log.service.js';
export { HardwareMessageRecorder } from './services/hardware-message.recorder.js';
export { DeveloperChannelTargets } from './services/channel-target.resolver.js';
export { DeviceTokenVerifier } from './verifiers/device-token.verifier.js';
export { formatPointer, JsonPointerSyntaxError, parsePointer, resolvePointer } from './json-pointer.js';
export { pointInto, schemaDocument } from './generic.js';
export { toHardwareView, toApplicationView, toHardwareLogView } from './views.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { DevNamedUpdateBody } from './dto/resource.dto.js';
export { hardwareSchema, pointerResultSchema, schemaDocumentSchema } from './schemas.js';
export type { JsonSchema } from './schemas.js';
