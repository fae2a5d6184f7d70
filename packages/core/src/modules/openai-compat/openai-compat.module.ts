import { defineModule } from '../../kernel/module.js';
import { openAiCompatRoutes } from './routes.js';

/** The OpenAI-compatible API under `/v1` (docs/openai-compatible.md). */
export const openAiCompatModule = defineModule({
  name: 'openaiCompat',
  dependsOn: ['bots', 'blocks', 'runs', 'billing', 'ai'],
  routes: openAiCompatRoutes,
});
