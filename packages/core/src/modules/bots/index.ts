export { botsModule } from './bots.module.js';
export { Bot, BotSchema, type BotConf } from './entities/bot.entity.js';
export { BotService } from './services/bot.service.js';
