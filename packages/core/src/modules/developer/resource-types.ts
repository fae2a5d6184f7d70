import type { EntityClass } from '@mikro-orm/core';
import type { ClassType } from '../../kernel/http/route.js';
import type { TObject } from '@sinclair/typebox';
import type { Static } from '../../kernel/http/response-schema.js';
import { AiModel, AiTool } from '../ai/index.js';
import { Bot, type BotConf } from '../bots/index.js';
import { Conversation, type ConversationConf } from '../conversations/index.js';
import type { User } from '../identity/index.js';
import {
  DevConvCreateBody,
  DevConvUpdateBody,
  DevModelCreateBody,
  DevModelUpdateBody,
  DevNamedCreateBody,
  DevNamedUpdateBody,
} from './dto/resource.dto.js';
import { Application } from './entities/application.entity.js';
import { DeveloperTask } from './entities/developer-task.entity.js';
import { Hardware } from './entities/hardware.entity.js';
import { appSchema, botSchema, convSchema, hardwareSchema, modelSchema, taskSchema, toolSchema } from './schemas.js';
import { toApplicationView, toDevBotView, toDevConvView, toDevModelView, toDevToolView, toHardwareView, toTaskView } from './views.js';

/** The resource names of the developer API, as they appear in `/dev/{R}` and `?type=`. */
export const devResourceTypes = ['hardware', 'model', 'bot', 'conv', 'task', 'tool', 'app'] as const;
export type DevResourceType = (typeof devResourceTypes)[number];

/** What every developer-managed entity has. */
export interface OwnedEntity {
  id: string;
  owner: User;
  createdAt: Date;
  updatedAt: Date;
}

/** The developer API's fields, validated by the type's DTO. */
export interface DevInput {
  name?: string;
  title?: string;
  type?: string;
  description?: string | null;
  config?: Record<string, unknown>;
}

/**
 * How one developer resource maps onto its entity. Bots, conversations, AI models and AI tools are
 * the entities of their own areas: the developer API's `description` and `config` land in their
 * `desc`/`conf` fields (see docs/http/developer.md).
 */
export interface DevResourceDescriptor<E extends OwnedEntity = OwnedEntity, S extends TObject = TObject> {
  type: DevResourceType;
  /** Singular noun for messages: "hardware device", "bot", ... */
  label: string;
  entity: EntityClass<E>;
  createBody: ClassType;
  updateBody: ClassType;
  /** The `*_not_found` error code. */
  notFound: string;
  /** The resource's response declaration (also what `GET /dev/schema?type=` answers). */
  schema: S;
  /** Entity fields (besides id and owner) of a new resource. */
  build(input: DevInput, ownerId: string): Record<string, unknown>;
  /** Applies an update; absent fields stay as they are. */
  apply(entity: E, input: DevInput): void;
  view(entity: E): Static<S>;
}

const descriptor = <E extends OwnedEntity, S extends TObject>(d: DevResourceDescriptor<E, S>): DevResourceDescriptor => d as unknown as DevResourceDescriptor;

/** Entities whose own columns are name, description and config. */
function plain<E extends OwnedEntity & { name: string; description: string | null; config: Record<string, unknown> }, S extends TObject>(
  type: DevResourceType,
  label: string,
  entity: EntityClass<E>,
  schema: S,
  view: (e: E) => Static<S>,
  notFound: string,
  extra: (input: DevInput) => Record<string, unknown> = () => ({}),
): DevResourceDescriptor {
  return descriptor<E, S>({
    type,
    label,
    entity,
    createBody: DevNamedCreateBody,
    updateBody: DevNamedUpdateBody,
    notFound,
    schema,
    build: (input) => ({ name: input.name!, description: input.description ?? null, config: input.config ?? {}, ...extra(input) }),
    apply(e, input) {
      if (input.name !== undefined) e.name = input.name;
      if (input.description !== undefined) e.description = input.description;
      if (input.config !== undefined) e.config = { ...input.config };
    },
    view,
  });
}

/**
 * Replaces a `conf` object with `config` (when given) and sets one text key from a separate field:
 * an explicit field wins, then the key inside the new config, then the old value.
 */
function mergeConf<C extends Record<string, unknown>>(old: C, input: DevInput, fields: Array<[keyof DevInput, string]>): C {
  const next: Record<string, unknown> = input.config !== undefined ? { ...input.config } : { ...old };
  for (const [field, key] of fields) {
    const value = input[field];
    if (value !== undefined) {
      if (value === null) delete next[key];
      else next[key] = value;
    } else if (input.config !== undefined && !(key in input.config) && old[key] !== undefined) {
      next[key] = old[key];
    }
  }
  return next as C;
}

export const devResources: Readonly<Record<DevResourceType, DevResourceDescriptor>> = {
  hardware: plain('hardware', 'hardware device', Hardware, hardwareSchema, toHardwareView, 'hardware_not_found', () => ({
    status: 'pending',
    lastSeenAt: null,
    simReported: null,
    simReportedAt: null,
    sim: null,
    simSyncedAt: null,
    tokenHash: null,
    tokenPrefix: null,
    tokenIssuedAt: null,
  })),
  task: plain('task', 'task', DeveloperTask, taskSchema, toTaskView, 'task_not_found'),
  app: plain('app', 'application', Application, appSchema, toApplicationView, 'app_not_found', () => ({
    tokenHash: null,
    tokenPrefix: null,
    tokenIssuedAt: null,
  })),
  model: descriptor<AiModel, typeof modelSchema>({
    type: 'model',
    label: 'model',
    entity: AiModel,
    createBody: DevModelCreateBody,
    updateBody: DevModelUpdateBody,
    notFound: 'model_not_found',
    schema: modelSchema,
    build: (input) => ({ name: input.name!, type: input.type!, desc: input.description ?? null, service: null, conf: input.config ?? {} }),
    apply(m, input) {
      if (input.name !== undefined) m.name = input.name;
      if (input.type !== undefined) m.type = input.type;
      if (input.description !== undefined) m.desc = input.description;
      if (input.config !== undefined) m.conf = { ...input.config };
    },
    view: toDevModelView,
  }),
  tool: descriptor<AiTool, typeof toolSchema>({
    type: 'tool',
    label: 'tool',
    entity: AiTool,
    createBody: DevNamedCreateBody,
    updateBody: DevNamedUpdateBody,
    notFound: 'tool_not_found',
    schema: toolSchema,
    build: (input) => ({ name: input.name!, desc: input.description ?? null, service: null, conf: input.config ?? {}, actions: [] }),
    apply(t, input) {
      if (input.name !== undefined) t.name = input.name;
      if (input.description !== undefined) t.desc = input.description;
      if (input.config !== undefined) t.conf = { ...input.config };
    },
    view: toDevToolView,
  }),
  bot: descriptor<Bot, typeof botSchema>({
    type: 'bot',
    label: 'bot',
    entity: Bot,
    createBody: DevNamedCreateBody,
    updateBody: DevNamedUpdateBody,
    notFound: 'bot_not_found',
    schema: botSchema,
    build: (input) => ({ name: input.name!, conf: mergeConf<BotConf>({}, input, [['description', 'desc']]) }),
    apply(b, input) {
      if (input.name !== undefined) b.name = input.name;
      if (input.config !== undefined || input.description !== undefined) b.conf = mergeConf(b.conf, input, [['description', 'desc']]);
    },
    view: toDevBotView,
  }),
  conv: descriptor<Conversation, typeof convSchema>({
    type: 'conv',
    label: 'conversation',
    entity: Conversation,
    createBody: DevConvCreateBody,
    updateBody: DevConvUpdateBody,
    notFound: 'conversation_not_found',
    schema: convSchema,
    build: (input, ownerId) => ({
      name: input.title!,
      bot: null,
      conf: { ...mergeConf<ConversationConf>({}, input, [['description', 'description']]), title: input.title! },
      members: [ownerId],
    }),
    apply(c, input) {
      if (input.title !== undefined) c.name = input.title;
      if (input.config !== undefined || input.description !== undefined || input.title !== undefined) {
        // The title lives in `name` and `conf.title`; a `title` key inside `config` does not change it.
        c.conf = { ...mergeConf(c.conf, input, [['description', 'description']]), title: c.name };
      }
    },
    view: toDevConvView,
  }),
};
