import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { speechSynthesizerServiceIdentifier, type SpeechSynthesizer } from '../../../ports/speech-synthesizer.js';
import { Conversation } from '../../conversations/entities/conversation.entity.js';
import { toolsConfigServiceIdentifier, type ToolsConfig } from '../config.js';
import { conversationMessageLookupServiceIdentifier, type ConversationMessageLookup } from '../speech/message-lookup.js';
import { splitSentences } from '../speech/split-sentences.js';

export interface SpeechResult {
  audio: string;
  format: 'mp3';
  sampleRate: number;
  duration: number;
  voice: string;
}

/**
 * `/tool/speech`: speaks a conversation message for a member of the conversation. The text is
 * split at sentence boundaries into pieces the synthesizer accepts, each piece is synthesised,
 * and the MP3 streams are joined (MP3 frames concatenate).
 */
@injectable()
export class SpeechService {
  constructor(
    @inject(toolsConfigServiceIdentifier) private readonly config: ToolsConfig,
    @inject(conversationMessageLookupServiceIdentifier) private readonly messages: ConversationMessageLookup,
    @inject(speechSynthesizerServiceIdentifier) @optional() private readonly bound: SpeechSynthesizer | undefined,
  ) {}

  private synthesizer(): SpeechSynthesizer {
    if (!this.bound) {
      throw new TrellisError('unavailable', 'speech_not_configured', 'No speech synthesizer is configured: install espeak-ng (apt-get install espeak-ng) or bind a SpeechSynthesizer adapter.');
    }
    return this.bound;
  }

  async speak(em: EntityManager, userId: string, conversationId: string, messageId: string, signal?: AbortSignal): Promise<SpeechResult> {
    const conversation = await em.findOne(Conversation, { id: conversationId }, { populate: ['owner'] });
    if (!conversation) throw new TrellisError('not_found', 'conversation_not_found', 'No such conversation.');
    const members = new Set<string>([...(Array.isArray(conversation.members) ? conversation.members : []), conversation.owner.id]);
    if (!members.has(userId)) throw new TrellisError('forbidden', 'not_conversation_member', 'Only members of the conversation may have its messages spoken.');
    const text = await this.messages.findText(em, conversationId, messageId);
    if (text === null) throw new TrellisError('not_found', 'message_not_found', 'The conversation has no such message.');
    const { maxTextLength, maxSentenceLength } = this.config.speech;
    if (text.length > maxTextLength) {
      throw new TrellisError('bad_request', 'speech_text_too_long', `The message has ${text.length} characters; at most ${maxTextLength} are spoken.`);
    }
    const synthesizer = this.synthesizer();
    const pieces = splitSentences(text, Math.min(maxSentenceLength, synthesizer.maxInputLength));
    if (pieces.length === 0) throw new TrellisError('validation', 'speech_empty_text', 'The message has no text to speak.');
    const chunks: Uint8Array[] = [];
    let duration = 0;
    let sampleRate = 0;
    for (const piece of pieces) {
      let audio;
      try {
        audio = await synthesizer.synthesize(piece, { language: 'zh', signal });
      } catch (error) {
        throw new TrellisError('unavailable', 'speech_synthesis_failed', `The speech synthesizer (${synthesizer.name}) failed.`, { cause: error });
      }
      chunks.push(audio.mp3);
      duration += audio.durationSeconds;
      sampleRate = audio.sampleRate;
    }
    return { audio: Buffer.concat(chunks).toString('base64'), format: 'mp3', sampleRate, duration: Math.round(duration * 1000) / 1000, voice: synthesizer.name };
  }
}
