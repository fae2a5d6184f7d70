import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { speechSynthesizerServiceIdentifier, type SpeechSynthesizer } from '../../../ports/speech-synthesizer.js';
import { Conversation } from '../../conversations/index.js';
import { TeamService } from '../../identity/index.js';
import { toolsConfigServiceIdentifier, type ToolsConfig } from '../config.js';
import { FairSlots } from '../speech/fair-slots.js';
import { conversationMessageLookupServiceIdentifier, type ConversationMessageLookup } from '../speech/message-lookup.js';
import { splitSentences } from '../speech/split-sentences.js';
import type { SpeechResult } from '../schemas.js';

export type { SpeechResult };

/**
 * `/tool/speech`: speaks a conversation message for a member of the conversation. The text is
 * split at sentence boundaries into pieces the synthesizer accepts, each piece is synthesised,
 * and the MP3 streams are joined (MP3 frames concatenate).
 *
 * Synthesis is costly (seconds of CPU per message), so it is bounded per process: each piece takes
 * a slot of `tools.speech.maxConcurrent`, at most `maxConcurrentPerTeam` of them per team (the
 * caller's first team), teams taking turns piece by piece; requests beyond the queues answer 429
 * `speech_busy` with Retry-After.
 */
@injectable()
export class SpeechService {
  private readonly slots: FairSlots;
  /** Recent seconds per request (moving average), for Retry-After. */
  private secondsPerRequest = 2;

  constructor(
    @inject(toolsConfigServiceIdentifier) private readonly config: ToolsConfig,
    @inject(conversationMessageLookupServiceIdentifier) private readonly messages: ConversationMessageLookup,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(speechSynthesizerServiceIdentifier) @optional() private readonly bound: SpeechSynthesizer | undefined,
  ) {
    const { maxConcurrent, maxConcurrentPerTeam, maxQueuedPerTeam, maxQueued } = config.speech;
    this.slots = new FairSlots({ maxConcurrent, maxConcurrentPerKey: maxConcurrentPerTeam, maxQueuedPerKey: maxQueuedPerTeam, maxQueued });
  }

  private synthesizer(): SpeechSynthesizer {
    if (!this.bound) {
      throw new TrellisError('unavailable', 'speech_not_configured', 'No speech synthesizer is configured: install espeak-ng (apt-get install espeak-ng) or bind a SpeechSynthesizer adapter.');
    }
    return this.bound;
  }

  async speak(em: EntityManager, userId: string, conversationId: string, messageId: string, signal?: AbortSignal): Promise<SpeechResult> {
    const conversation = await em.findOne(Conversation, { id: conversationId }, { populate: ['owner'] });
    const members = new Set<string>(conversation ? [...(Array.isArray(conversation.members) ? conversation.members : []), conversation.owner.id] : []);
    // An outsider learns nothing, not even that the conversation exists.
    if (!conversation || !members.has(userId)) throw new TrellisError('not_found', 'conversation_not_found', 'No such conversation.');
    const text = await this.messages.findText(em, conversationId, messageId);
    if (text === null) throw new TrellisError('not_found', 'message_not_found', 'The conversation has no such message.');
    const { maxTextLength, maxSentenceLength } = this.config.speech;
    if (text.length > maxTextLength) {
      throw new TrellisError('bad_request', 'speech_text_too_long', `The message has ${text.length} characters; at most ${maxTextLength} are spoken.`);
    }
    const synthesizer = this.synthesizer();
    const pieces = splitSentences(text, Math.min(maxSentenceLength, synthesizer.maxInputLength));
    if (pieces.length === 0) throw new TrellisError('validation', 'speech_empty_text', 'The message has no text to speak.');
    const team = (await this.teams.firstTeam(em, userId))?.team.id ?? `user:${userId}`;
    const ticket = this.slots.admit(team);
    if (typeof ticket === 'string') {
      const retryAfter = Math.max(1, Math.min(300, Math.ceil(this.secondsPerRequest)));
      const who = ticket === 'key_busy' ? 'Your team has' : 'The server has';
      throw new TrellisError('rate_limited', 'speech_busy', `${who} too many speech requests in progress; retry in ${retryAfter} s.`, { headers: { 'retry-after': String(retryAfter) } });
    }
    const started = performance.now();
    const chunks: Uint8Array[] = [];
    let duration = 0;
    let sampleRate = 0;
    try {
      for (const piece of pieces) {
        let audio;
        try {
          audio = await ticket.run(() => synthesizer.synthesize(piece, { language: 'zh', signal }), signal);
        } catch (error) {
          throw new TrellisError('unavailable', 'speech_synthesis_failed', `The speech synthesizer (${synthesizer.name}) failed.`, { cause: error });
        }
        chunks.push(audio.mp3);
        duration += audio.durationSeconds;
        sampleRate = audio.sampleRate;
      }
    } finally {
      ticket.done();
      this.secondsPerRequest = 0.8 * this.secondsPerRequest + 0.2 * ((performance.now() - started) / 1000);
    }
    return { audio: Buffer.concat(chunks).toString('base64'), format: 'mp3', sampleRate, duration: Math.round(duration * 1000) / 1000, voice: synthesizer.voice ?? synthesizer.name };
  }
}
