export { adminModule } from './admin.module.js';
export { adminConfigSchema } from './admin.config.js';
export { AdminUserService, adminSettingsServiceIdentifier, userWhere, type Acting, type AdminSettings, type AdminUserUpdate, type UserFilter } from './services/admin-user.service.js';
export { AdminHardwareService } from './services/admin-hardware.service.js';
export { userRoles, type UserRole } from './dto/user.dto.js';
export { adminResourceTypes, type AdminResourceType } from './dto/generic.dto.js';
export { toAdminUserView, rolesOf } from './views.js';
