import { defineModule } from '../../kernel/module.js';
import { AiModelSchema } from './entities/ai-model.entity.js';
import { AiToolSchema } from './entities/ai-tool.entity.js';
import { migrations } from './migrations/index.js';

/**
 * AI model configurations and AI tools. This issue brings the entities (shared with the developer
 * API's `/dev/model` and `/dev/tool`); the `/ai` routes and providers come with their issue.
 */
export const aiModule = defineModule({
  name: 'ai',
  dependsOn: ['identity'],
  entities: [AiModelSchema, AiToolSchema],
  migrations,
});
