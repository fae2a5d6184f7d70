import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { SpeechBody } from '../dto/speech.dto.js';
import { speechSchema } from '../schemas.js';
import { SpeechService } from '../services/speech.service.js';
import { toolAuth } from './auth.js';

export const speechRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/tool/speech',
    summary: 'Speak a conversation message (base64 MP3, Mandarin female voice)',
    description:
      'Only members of the conversation may ask; to anyone else the conversation does not exist (404). Long messages are split at sentence boundaries and synthesised piece by piece (`tools.speech.maxSentenceLength`); longer than `tools.speech.maxTextLength` answers 400. Synthesis is bounded per process and per team (`tools.speech.maxConcurrent`, `maxConcurrentPerTeam`, `maxQueuedPerTeam`, `maxQueued`), teams taking turns; beyond the queues 429 with Retry-After.',
    tags: ['Tool service'],
    auth: toolAuth,
    body: SpeechBody,
    validationError: { status: 400, code: 'validation_failed' },
    response: { schema: speechSchema },
    errors: {
      400: 'convId or msgId missing (validation_failed), or the message is too long (speech_text_too_long)',
      404: 'No such conversation, or the caller is not a member of it (conversation_not_found), or no such message (message_not_found)',
      422: 'The message has no text to speak (speech_empty_text)',
      429: 'The team, or the server, has too many speech requests in progress (speech_busy, with Retry-After)',
      503: 'No speech synthesizer is configured (speech_not_configured), or it failed (speech_synthesis_failed)',
    },
    async handler(ctx) {
      return ctx.get(SpeechService).speak(ctx.em, ctx.requirePrincipal().userId, ctx.body.convId, ctx.body.msgId, ctx.signal);
    },
  }),
];
