export { conversationsModule } from './conversations.module.js';
export { Conversation, ConversationSchema, type ConversationConf } from './entities/conversation.entity.js';
