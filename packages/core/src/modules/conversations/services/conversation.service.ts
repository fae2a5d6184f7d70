import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Bot } from '../../bots/index.js';
import { User } from '../../identity/index.js';
import { ConversationMember } from '../entities/conversation-member.entity.js';
import { Conversation, type ConversationConf } from '../entities/conversation.entity.js';
import { Message } from '../entities/message.entity.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { isUuid } from '../../../kernel/crypto.js';

export const conversationNotFound = (id: string) => new TrellisError('not_found', 'conversation_not_found', `No conversation you are a member of has the id ${id}.`);
export const messageNotFound = (id: string) => new TrellisError('not_found', 'message_not_found', `The conversation has no message with the id ${id}.`);

export interface ConversationCreateInput {
  name: string;
  botId?: string;
  conf?: Record<string, unknown>;
  members?: string[];
  hdId?: string;
}

/**
 * Conversations and their members. Members (the owner always among them) read, send and update;
 * only the owner deletes. Anyone else is told the conversation does not exist (404).
 */
@injectable()
export class ConversationService {
  constructor(@inject(idsServiceIdentifier) private readonly ids: Ids) {}

  async create(em: EntityManager, userId: string, input: ConversationCreateInput): Promise<Conversation> {
    let bot: Bot | null = null;
    if (input.botId) {
      bot = await em.findOne(Bot, { id: input.botId, owner: userId });
      if (!bot) throw new TrellisError('bad_request', 'invalid_bot', `botId names no bot of yours (${input.botId}).`);
    }
    const members = [userId, ...new Set((input.members ?? []).filter((id) => id !== userId))];
    const others = members.slice(1);
    if (others.length) {
      const found = await em.count(User, { id: { $in: others } });
      if (found !== others.length) throw new TrellisError('bad_request', 'unknown_members', 'members names users that do not exist.');
    }
    return inTransaction(em, async (tx) => {
      const conversation = tx.create(Conversation, {
        id: this.ids.next(),
        owner: tx.getReference(User, userId),
        name: input.name,
        bot: bot ? tx.getReference(Bot, bot.id) : null,
        conf: (input.conf ?? {}) as ConversationConf,
        members,
        hdId: input.hdId ?? null,
      } as Conversation);
      for (const member of others) tx.create(ConversationMember, { id: this.ids.next(), conversation, userId: member } as ConversationMember);
      return conversation;
    });
  }

  async list(em: EntityManager, userId: string, page: Paging, hdId?: string): Promise<{ items: Conversation[]; total: number }> {
    const rows = await em.find(ConversationMember, { userId }, { fields: ['conversation'] });
    const shared = rows.map((r) => r.conversation.id);
    const where = { $or: [{ owner: userId }, ...(shared.length ? [{ id: { $in: shared } }] : [])], ...(hdId ? { hdId } : {}) };
    const [items, total] = await em.findAndCount(Conversation, where, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /** The conversation when `userId` is a member (the owner is one), else 404. */
  async requireMember(em: EntityManager, userId: string, id: string): Promise<Conversation> {
    const conversation = isUuid(id) ? await em.findOne(Conversation, { id }, { populate: ['bot'] }) : null;
    if (!conversation) throw conversationNotFound(id);
    if (conversation.owner.id === userId || conversation.members.includes(userId)) return conversation;
    if (await em.count(ConversationMember, { conversation: id, userId })) return conversation;
    throw conversationNotFound(id);
  }

  async update(em: EntityManager, userId: string, id: string, input: { name?: string; conf?: Record<string, unknown> }): Promise<Conversation> {
    const conversation = await this.requireMember(em, userId, id);
    if (input.name !== undefined) conversation.name = input.name;
    if (input.conf !== undefined) conversation.conf = { ...input.conf } as ConversationConf;
    await em.flush();
    return conversation;
  }

  /** Irreversible: the conversation, its members and all its messages. Owner only (403 for other members). */
  async remove(em: EntityManager, userId: string, id: string): Promise<void> {
    const conversation = await this.requireMember(em, userId, id);
    if (conversation.owner.id !== userId) throw new TrellisError('forbidden', 'conversation_owner_required', 'Only the owner of a conversation can delete it.');
    await inTransaction(em, async (tx) => {
      await tx.nativeDelete(Message, { conversation: id });
      await tx.nativeDelete(ConversationMember, { conversation: id });
      await tx.nativeDelete(Conversation, { id });
    });
  }

  /** Messages oldest first. */
  async messages(em: EntityManager, conversationId: string, page: Paging): Promise<{ items: Message[]; total: number }> {
    const [items, total] = await em.findAndCount(Message, { conversation: conversationId }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  /** Every user id that receives the conversation's pushes. */
  memberIds(conversation: Conversation): string[] {
    return [...new Set([conversation.owner.id, ...conversation.members])];
  }
}
