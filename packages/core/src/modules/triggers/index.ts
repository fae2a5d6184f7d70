export { triggersModule } from './triggers.module.js';
export { triggersConfigSchema, type TriggersConfig } from './triggers.config.js';
export { signWebhook, verifyWebhook, webhookHeaders, newWebhookSecret } from './services/signature.js';
export { webhookEvents, type WebhookEvent } from './entities/subscription.entity.js';
export { ScheduleService } from './services/schedule.service.js';
export { Schedule, ScheduleFire, missedPolicies, type MissedPolicy } from './entities/schedule.entity.js';
export { toScheduleView } from './views.js';
export { scheduleTimerServiceIdentifier, type ScheduleTimer, type ScheduleTimerEntry, type ScheduleDueHandler } from './schedule-timer.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { DeploymentRuns } from './services/deployment-runs.js';
