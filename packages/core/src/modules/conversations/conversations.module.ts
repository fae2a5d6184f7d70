import { defineModule } from '../../kernel/module.js';
import { ConversationSchema } from './entities/conversation.entity.js';
import { migrations } from './migrations/index.js';

/**
 * Conversations. This issue brings the entity (shared with the developer API's `/dev/conv`); the
 * conversation routes, messages and streaming come with their issue.
 */
export const conversationsModule = defineModule({
  name: 'conversations',
  dependsOn: ['identity', 'bots'],
  entities: [ConversationSchema],
  migrations,
});
