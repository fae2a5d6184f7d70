import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';

/**
 * Where `/tool/speech` reads the text of a message: by its id within a conversation. The message
 * entity comes with the conversations area's messages (built in parallel); until they are merged
 * this lookup finds it by name in the ORM's metadata, so no code here depends on its module.
 */
export interface ConversationMessageLookup {
  /** The message's text, or null when the conversation has no such message. */
  findText(em: EntityManager, conversationId: string, messageId: string): Promise<string | null>;
}

export const conversationMessageLookupServiceIdentifier: ServiceIdentifier<ConversationMessageLookup> = Symbol.for('@trellis/core/tools/ConversationMessageLookup');

/**
 * The default lookup: the entity named `entityName` (default `Message`) with a many-to-one
 * `conversation` and a `content` that is a string, or an object with a string `text` or `content`.
 * When no such entity is loaded, every message is missing (404 `message_not_found`).
 */
export class MetadataMessageLookup implements ConversationMessageLookup {
  constructor(private readonly entityName = 'Message') {}

  async findText(em: EntityManager, conversationId: string, messageId: string): Promise<string | null> {
    const meta = em.getMetadata().find(this.entityName);
    if (!meta || !meta.properties['conversation'] || !meta.properties['content']) return null;
    const row = (await em.findOne(meta.className, { id: messageId, conversation: conversationId } as never)) as { content?: unknown } | null;
    if (!row) return null;
    const content = row.content;
    if (typeof content === 'string') return content;
    if (content && typeof content === 'object') {
      const { text, content: inner } = content as { text?: unknown; content?: unknown };
      if (typeof text === 'string') return text;
      if (typeof inner === 'string') return inner;
    }
    return '';
  }
}
