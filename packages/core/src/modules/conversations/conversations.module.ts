import { defineModule } from '../../kernel/module.js';
import { ConversationMemberSchema } from './entities/conversation-member.entity.js';
import { ConversationSchema } from './entities/conversation.entity.js';
import { MessageSchema } from './entities/message.entity.js';
import { migrations } from './migrations/index.js';

export const conversationsModule = defineModule({
  name: 'conversations',
  dependsOn: ['identity', 'bots', 'ai', 'billing', 'realtime'],
  entities: [ConversationSchema, ConversationMemberSchema, MessageSchema],
  migrations,
});
