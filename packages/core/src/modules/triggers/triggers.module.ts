import { ContainerModule } from 'inversify';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { defineModule } from '../../kernel/module.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import { pubSubServiceIdentifier } from '../../ports/pubsub.js';
import { documentScopes } from '../projects/index.js';
import { ScheduleFireSchema, ScheduleSchema } from './entities/schedule.entity.js';
import { WebhookDeliverySchema, WebhookSubscriptionSchema } from './entities/subscription.entity.js';
import { WebhookReceiptSchema, WebhookTriggerSchema } from './entities/webhook-trigger.entity.js';
import { migrations } from './migrations/index.js';
import { runEventsOf } from './outbound-events.js';
import { scheduleRoutes } from './routes/schedule.routes.js';
import { subscriptionRoutes } from './routes/subscription.routes.js';
import { webhookTriggerRoutes } from './routes/webhook-trigger.routes.js';
import { DeploymentRuns } from './services/deployment-runs.js';
import { OutboundWebhookService, SUBSCRIPTIONS_CHANGED } from './services/outbound.service.js';
import { ScheduleService } from './services/schedule.service.js';
import { WebhookTriggerService } from './services/webhook-triggers.service.js';
import { scheduleTimerServiceIdentifier } from './schedule-timer.js';
import { triggersConfigServiceIdentifier } from './tokens.js';
import { triggersConfigSchema, type TriggersConfig } from './triggers.config.js';

const configOf = (config: unknown) => (config as { triggers: TriggersConfig }).triggers;

/**
 * Triggers: what starts runs of deployments besides `POST /block/:bid/api` (inbound webhooks and
 * schedules), and outbound webhooks that tell other systems about runs and conversation turns.
 * Each trigger's run is an ordinary deployment run (events, credits, versions, replay).
 */
export const triggersModule = defineModule({
  name: 'triggers',
  dependsOn: ['identity', 'ai', 'projects', 'blocks', 'runs', 'conversations'],
  config: triggersConfigSchema,
  entities: [WebhookTriggerSchema, WebhookReceiptSchema, ScheduleSchema, ScheduleFireSchema, WebhookSubscriptionSchema, WebhookDeliverySchema],
  migrations,
  container: ({ section }) =>
    new ContainerModule(({ bind }) => {
      bind(triggersConfigServiceIdentifier).toConstantValue(section as TriggersConfig);
      bind(DeploymentRuns).toSelf().inSingletonScope();
      bind(WebhookTriggerService).toSelf().inSingletonScope();
      bind(ScheduleService).toSelf().inSingletonScope();
      bind(OutboundWebhookService).toSelf().inSingletonScope();
    }),
  routes: ({ section }) => [
    ...scopeRoutes([...webhookTriggerRoutes(section as TriggersConfig), ...scheduleRoutes()], documentScopes),
    ...subscriptionRoutes(),
  ],
  jobs: [
    {
      name: 'triggers.schedules',
      intervalMs: (config) => configOf(config).schedules.tickMs,
      async run(ctx) {
        await ctx.get(ScheduleService).tick(ctx.em);
      },
    },
    {
      name: 'triggers.deliveries',
      intervalMs: (config) => configOf(config).outbound.pollMs,
      async run(ctx) {
        await ctx.get(OutboundWebhookService).run(ctx.em);
      },
    },
    {
      name: 'triggers.prune-receipts',
      intervalMs: 60_000,
      async run(ctx) {
        await ctx.get(WebhookTriggerService).pruneReceipts(ctx.em);
      },
    },
  ],
  async onStart(ctx) {
    const outbound = ctx.get(OutboundWebhookService);
    const kernel = ctx.get(kernelServiceIdentifier);
    outbound.forkOf = () => kernel.fork();
    const send = async (events: ReturnType<typeof runEventsOf>) => {
      for (const event of events) await outbound.enqueue(() => kernel.fork(), event);
    };
    await ctx.get(pubSubServiceIdentifier).subscribe(SUBSCRIPTIONS_CHANGED, () => outbound.forgetOwners());
    ctx.hooks.on('run.finished', (run) => send(runEventsOf('finished', run)));
    ctx.hooks.on('run.waiting', (run) => send(runEventsOf('waiting', run)));
    ctx.hooks.on('conversation.turnFinished', (turn) =>
      send([{ type: 'conversation.turn_finished', userId: turn.userId, teamId: turn.teamId, key: `${turn.conversationId}:${turn.messageId}:${turn.status}`, data: { ...turn } }]),
    );
    ctx.hooks.on('budget.reached', (budget) => send([{ type: 'budget.reached', userId: null, teamId: budget.teamId, key: `${budget.teamId}:${budget.key}`, data: { ...budget } }]));
    await ctx.get(ScheduleService).startTimer(kernel.fork());
  },
  async onStop(ctx) {
    await ctx.get(OutboundWebhookService).stop();
    if (ctx.get(ScheduleService).timed) await ctx.get(scheduleTimerServiceIdentifier).close();
  },
});
