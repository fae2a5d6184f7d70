import { Transform } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Length, Matches, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { missedPolicies, type MissedPolicy } from '../entities/schedule.entity.js';
import { webhookEvents, type WebhookEvent } from '../entities/subscription.entity.js';
import { webhookAnswers, webhookVerifications, type WebhookAnswer, type WebhookVerification } from '../entities/webhook-trigger.entity.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const VERSION = /^\d{1,9}(\.\d{1,9}){0,2}$/;
const notNull = (_: object, value: unknown) => value !== null;

export class BidTriggerParams {
  @IsUUID('all')
  bid!: string;

  @IsUUID('all')
  triggerId!: string;
}

export class HookParams {
  @IsUUID('all')
  triggerId!: string;
}

export class ScheduleParams {
  @IsUUID('all')
  scheduleId!: string;
}

export class SubscriptionParams {
  @IsUUID('all')
  subscriptionId!: string;
}

export class DeliveryParams {
  @IsUUID('all')
  subscriptionId!: string;

  @IsUUID('all')
  deliveryId!: string;
}

export class ScheduleListQuery extends PageQuery {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'The schedules of this block (the read permission in its project); without it, the schedules you created.' })
  blockId?: string;
}

const mappingDoc = {
  description:
    'Input name → where its value comes from: `body` (the whole body), `body.<path>` (a field of the JSON body, dots between keys and array indexes), `form.<field>`, `query.<name>` or `header.<name>`. Empty (default): the JSON body\'s or form\'s fields are the inputs.',
  schema: { type: 'object', additionalProperties: { type: 'string' } },
  example: { ticket: 'body.ticket.id', priority: 'query.priority' },
};

class WebhookTriggerFields {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsIn(webhookVerifications)
  @Doc({ description: '`standard` (default): Standard Webhooks signatures (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with a `whsec_` secret; `bearer`: the secret in `Authorization: Bearer`.' })
  verification?: WebhookVerification;

  @IsOptional()
  @IsObject()
  @Doc(mappingDoc)
  mapping?: Record<string, string>;

  @IsOptional()
  @IsIn(webhookAnswers)
  @Doc({ description: '`accepted` (default): 202 with the run id at once; `wait`: the run\'s result (200) when it ends within `waitSeconds`, else 202.' })
  answer?: WebhookAnswer;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(3_600)
  @Doc({ description: 'How long `wait` mode waits (capped by `triggers.webhooks.maxWaitSeconds`).' })
  waitSeconds?: number;

  @IsOptional()
  @ValidateIf(notNull)
  @IsString()
  @Matches(VERSION)
  @Doc({ description: 'The deployed version to run (null: the latest at each delivery).', schema: { type: ['string', 'null'] } })
  version?: string | null;

  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

@Schema({ name: 'CreateWebhookTriggerRequest' })
export class CreateWebhookTriggerBody extends WebhookTriggerFields {}

@Schema({ name: 'UpdateWebhookTriggerRequest' })
export class UpdateWebhookTriggerBody extends WebhookTriggerFields {
  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Issue a new secret (answered once); the old one is revoked.' })
  rotateSecret?: boolean;
}

class ScheduleFields {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Time zone the cron expression is read in: an IANA name (default `UTC`).', example: 'Europe/Paris' })
  timezone?: string;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'The inputs of each run (checked against the deployment\'s input definitions when a run starts).', schema: { type: 'object', additionalProperties: true } })
  inputs?: Record<string, unknown>;

  @IsOptional()
  @ValidateIf(notNull)
  @IsString()
  @Matches(VERSION)
  @Doc({ description: 'The deployed version to run (null: the latest at each due time).', schema: { type: ['string', 'null'] } })
  version?: string | null;

  @IsOptional()
  @IsIn(missedPolicies)
  @Doc({ description: 'Due times missed while no process ran (downtime, older than `triggers.schedules.graceSeconds`): `skip` (default) drops them, `runOnce` starts one run for them all.' })
  missed?: MissedPolicy;

  @IsOptional()
  @IsBoolean()
  paused?: boolean;
}

const cronDoc = { description: 'Five fields (minute hour day-of-month month day-of-week), or six with seconds first; `@hourly`, `@daily` and the like.', example: '0 9 * * 1-5' };

@Schema({ name: 'CreateScheduleRequest' })
export class CreateScheduleBody extends ScheduleFields {
  @IsString()
  @Length(1, 200)
  @Doc(cronDoc)
  cron!: string;
}

@Schema({ name: 'UpdateScheduleRequest' })
export class UpdateScheduleBody extends ScheduleFields {
  @IsOptional()
  @IsString()
  @Length(1, 200)
  @Doc(cronDoc)
  cron?: string;
}

const eventsDoc = { description: `Events to receive: ${webhookEvents.map((e) => `\`${e}\``).join(', ')}.`, schema: { type: 'array', items: { type: 'string', enum: [...webhookEvents] } } };

@Schema({ name: 'CreateWebhookSubscriptionRequest' })
export class CreateSubscriptionBody {
  @IsString()
  @MaxLength(2_048)
  @Doc({ description: 'Where to POST: http or https. The server connects through its network guard (private addresses need `network.allowPrivateNetworks`).', example: 'https://example.com/trellis-events' })
  url!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(webhookEvents.length)
  @IsIn(webhookEvents, { each: true })
  @Doc(eventsDoc)
  events!: WebhookEvent[];

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Events of this team\'s runs and conversations (the team role owner or admin); without it, events of your own.' })
  teamId?: string;

  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

@Schema({ name: 'UpdateWebhookSubscriptionRequest' })
export class UpdateSubscriptionBody {
  @IsOptional()
  @IsString()
  @MaxLength(2_048)
  url?: string;

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(webhookEvents.length)
  @IsIn(webhookEvents, { each: true })
  @Doc(eventsDoc)
  events?: WebhookEvent[];

  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;

  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'Issue a new signing secret (answered once).' })
  rotateSecret?: boolean;
}
