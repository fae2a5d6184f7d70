import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { AiToolService } from '../../ai/index.js';
import { Conversation } from '../entities/conversation.entity.js';
import { Message } from '../entities/message.entity.js';
import { toMessageView, type ToolExecutionView } from '../views.js';
import { ConversationService, messageNotFound } from './conversation.service.js';
import { ConversationTurnService } from './conversation-turn.service.js';

export interface ExecuteInput {
  content: string;
  convId: string;
  msgId: string;
  hook: string;
  data?: Record<string, unknown>;
  send?: boolean;
}

/** `POST /ai/tools/{toolId}/execute`: runs one action of a tool in the context of a conversation message. */
@injectable()
export class ToolExecutionService {
  constructor(
    @inject(AiToolService) private readonly tools: AiToolService,
    @inject(ConversationService) private readonly conversations: ConversationService,
    @inject(ConversationTurnService) private readonly turns: ConversationTurnService,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
  ) {}

  async execute(em: EntityManager, userId: string, toolId: string, input: ExecuteInput, signal?: AbortSignal): Promise<ToolExecutionView> {
    const tool = await this.tools.get(em, userId, toolId);
    const conversation = await this.conversations.requireMember(em, userId, input.convId);
    if (!(await em.count(Message, { id: input.msgId, conversation: conversation.id }))) throw messageNotFound(input.msgId);
    const action = tool.actions.find((a) => a.name === input.hook);
    if (!action) throw new TrellisError('not_found', 'tool_action_not_found', `The tool has no action named ${input.hook}.`);
    const args = input.data ?? { content: input.content };
    const result = await this.tools.run(action, args, { content: input.content, convId: input.convId, msgId: input.msgId, data: input.data ?? {}, ownerId: userId }, signal);
    if (!input.send) return { toolId, hook: input.hook, result, message: null };
    const message = em.create(Message, {
      id: this.ids.next(),
      conversation: em.getReference(Conversation, conversation.id),
      role: 'tool',
      content: typeof result === 'string' ? result : JSON.stringify(result ?? null),
      status: 'completed',
      authorId: userId,
      attrs: {},
      toolCalls: null,
      toolCallId: null,
      toolName: `${tool.name}.${action.name}`.slice(0, 128),
      usage: null,
      error: null,
      debug: null,
    } as unknown as Message);
    await em.flush();
    await this.turns.notify({ conversation, members: this.conversations.memberIds(conversation) }, 'tool-result', message.id, { toolCallId: null, toolName: message.toolName, result });
    return { toolId, hook: input.hook, result, message: toMessageView(message) };
  }
}
