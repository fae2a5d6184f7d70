import { EntitySchema } from '@mikro-orm/core';
import { User } from '../../identity/index.js';

/**
 * An AI model configuration (spec: name, desc, service, conf). One entity serves the AI area and
 * the developer API (`/dev/model`, which maps `description` to `desc` and `config` to `conf`, and
 * stores the developer's `type` in its own column).
 */
export class AiModel {
  id!: string;
  owner!: User;
  name!: string;
  desc!: string | null;
  /** Names the AI provider adapter that serves the model; null until one is chosen. */
  service!: string | null;
  /** What kind of model this is (`chat`, `embedding`, ...), as the developer API names it. */
  type!: string | null;
  /** Provider-specific settings. */
  conf!: Record<string, unknown>;
  createdAt!: Date;
  updatedAt!: Date;
}

export const AiModelSchema = new EntitySchema<AiModel>({
  class: AiModel,
  tableName: 'ai_models',
  indexes: [{ properties: ['owner', 'createdAt'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    owner: { kind: 'm:1', entity: () => User, deleteRule: 'cascade' },
    name: { type: 'string', length: 200 },
    desc: { type: 'text', nullable: true },
    service: { type: 'string', length: 64, nullable: true },
    type: { type: 'string', length: 64, nullable: true },
    conf: { type: 'json' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
