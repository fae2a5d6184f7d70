import type { TrellisModule } from '../kernel/module.js';
import { identityModule } from './identity/identity.module.js';
import { billingModule } from './billing/billing.module.js';
import { systemModule } from './system/system.module.js';
import { realtimeModule } from './realtime/realtime.module.js';
import { botsModule } from './bots/bots.module.js';
import { conversationsModule } from './conversations/conversations.module.js';
import { aiModule } from './ai/ai.module.js';
import { auditModule } from './audit/audit.module.js';
import { developerModule } from './developer/developer.module.js';
import { adminModule } from './admin/admin.module.js';
import { oauthModule } from './oauth/oauth.module.js';
import { projectsModule } from './projects/projects.module.js';
import { documentsModule } from './documents/documents.module.js';
import { collabModule } from './collab/collab.module.js';
import { runsModule } from './runs/runs.module.js';
import { blocksModule } from './blocks/blocks.module.js';
import { toolsModule } from './tools/tools.module.js';
import { triggersModule } from './triggers/triggers.module.js';
import { evaluationsModule } from './evaluations/evaluations.module.js';
import { openAiCompatModule } from './openai-compat/openai-compat.module.js';
import { mcpModule } from './mcp/mcp.module.js';
import { knowledgeModule } from './knowledge/knowledge.module.js';

/**
 * Every built-in area, in load order. A new area is a folder under `modules/` and one line here.
 */
export const coreModules: readonly TrellisModule[] = [systemModule, identityModule, billingModule, realtimeModule, botsModule, conversationsModule, aiModule, auditModule, developerModule, adminModule, oauthModule, projectsModule, documentsModule, collabModule, blocksModule, runsModule, toolsModule, triggersModule, evaluationsModule, openAiCompatModule, mcpModule, knowledgeModule];
