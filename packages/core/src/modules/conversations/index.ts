export { conversationsModule } from './conversations.module.js';
export { Conversation, ConversationSchema, type ConversationConf } from './entities/conversation.entity.js';
export { ConversationMember, ConversationMemberSchema } from './entities/conversation-member.entity.js';
export { Message, MessageSchema, type MessageRole, type MessageStatus, type MessageToolCall, type MessageAttrs } from './entities/message.entity.js';
export { ConversationService } from './services/conversation.service.js';
export { ConversationTurnService, type TurnOptions, type TurnResult, type ConversationEventType } from './services/conversation-turn.service.js';
export { ToolExecutionService } from './services/tool-execution.service.js';
export { TurnLog } from './services/turn-log.js';
export { ConversationEventBatch, type ConversationEventRecord } from './entities/conversation-event.entity.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export type {} from './hooks.js'; // its declaration merging
