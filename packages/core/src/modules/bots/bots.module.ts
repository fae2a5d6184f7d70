import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { BotSchema } from './entities/bot.entity.js';
import { migrations } from './migrations/index.js';
import { botRoutes } from './routes.js';
import { BotService } from './services/bot.service.js';

/** Bots (`/bot`): a name and a conf naming the AI model (and tools) that answer in its conversations. */
export const botsModule = defineModule({
  name: 'bots',
  dependsOn: ['identity', 'ai'],
  entities: [BotSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(BotService).toSelf();
    }),
  routes: botRoutes,
});
