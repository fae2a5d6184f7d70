import type { RouteDefinition } from '../../../kernel/http/route.js';
import type { ModuleContext } from '../../../kernel/module.js';
import { adminRoutes } from './admin.routes.js';
import { appInfoRoutes } from './app-info.routes.js';
import { consentPageRoute } from './consent-page.js';
import { protocolRoutes } from './protocol.routes.js';
import { registrationRoute } from './registration.routes.js';

/** Every OAuth route; the built-in consent page only when no `frontendUrl` is configured. */
export function oauthRoutes({ config }: ModuleContext): RouteDefinition[] {
  return [...protocolRoutes, registrationRoute, ...appInfoRoutes, ...adminRoutes, ...(config.frontendUrl ? [] : [consentPageRoute])];
}
