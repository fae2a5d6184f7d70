import { defineModule } from '../../kernel/module.js';
import { BotSchema } from './entities/bot.entity.js';
import { migrations } from './migrations/index.js';

/**
 * Bots. This issue brings the entity (shared with the developer API's `/dev/bot`); the bots
 * area's own routes (`/bot`) come with their issue.
 */
export const botsModule = defineModule({
  name: 'bots',
  dependsOn: ['identity'],
  entities: [BotSchema],
  migrations,
});
