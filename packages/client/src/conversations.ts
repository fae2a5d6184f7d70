import type { Client } from 'openapi-fetch';
import { TrellisApiError } from './errors.js';
import type { paths } from './generated/openapi.js';
import type { UserChannel } from './user-channel.js';

type TurnAnswer = paths['/conversation/{convId}/messages']['post']['responses'][200]['content']['application/json'];

/** A `conversation` push of a streamed turn (docs/http/websocket.md, "Conversation notifications"). */
export interface ConversationEvent {
  convId: string;
  msgId: string;
  type: 'message-start' | 'delta' | 'tool-call' | 'tool-result' | 'end' | 'error';
  content: any;
  seq?: number;
}

export interface TurnOptions {
  /** Stream the answer over the user channel (which must be connected): `events` yields it. */
  channel?: UserChannel;
  /** Run the bot's tool calls on the server until it answers. */
  toolAuto?: boolean;
}

export interface Turn {
  convId: string;
  /** `streaming`, `completed`, `waiting_tool` or `step_limit`, as the send answered. */
  status: TurnAnswer['status'];
  /** The messages the send created (streamed: the user's and the assistant message being written). */
  messages: TurnAnswer['messages'];
  /** The streamed events of the turn until its `end` (or a final `error`); nothing for a turn that was not streamed. */
  events(): AsyncGenerator<ConversationEvent>;
  /** The assistant's text: the joined deltas of a streamed turn, else the last assistant message. */
  text(): Promise<string>;
}

/** Whether an event ends a streamed turn: `end`, or an `error` that no `end` follows. */
const ends = (event: ConversationEvent) => event.type === 'end' || (event.type === 'error' && event.content?.error !== 'tool_step_limit');

/**
 * Conversation turns: send a message and read the bot's answer, at once or streamed over the user
 * channel. Streaming listens before the message is sent, so no push of the turn is missed, and the
 * channel's resume makes a dropped connection lose none either.
 */
export class ConversationTurns {
  constructor(private readonly api: Client<paths>) {}

  async send(convId: string, content: string, options: TurnOptions = {}): Promise<Turn> {
    const stream = options.channel !== undefined;
    const queue: ConversationEvent[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    const stop = options.channel?.on('conversation', (params) => {
      if (params.convId !== convId || done) return;
      queue.push(params as ConversationEvent);
      if (ends(params as ConversationEvent)) done = true;
      wake?.();
    });
    let answer: TurnAnswer;
    try {
      const { data, error, response } = await this.api.POST('/conversation/{convId}/messages', {
        params: { path: { convId } },
        body: { content, attrs: { stream, tool_auto: options.toolAuto === true } },
      });
      if (error || !data) throw new TrellisApiError(response.status, (error as { error?: string })?.error ?? `http_${response.status}`, (error as { message?: string })?.message ?? `HTTP ${response.status}`, error);
      answer = data;
    } catch (error) {
      stop?.();
      throw error;
    }
    if (!stream) stop?.();
    async function* events(): AsyncGenerator<ConversationEvent> {
      if (!stream) return;
      try {
        for (;;) {
          while (queue.length) {
            const event = queue.shift()!;
            yield event;
            if (ends(event)) return;
          }
          await new Promise<void>((resolve) => (wake = resolve));
        }
      } finally {
        stop?.();
      }
    }
    const stream$ = events();
    return {
      convId,
      status: answer.status,
      messages: answer.messages,
      events: () => stream$,
      async text() {
        if (!stream) return [...answer.messages].reverse().find((m) => m.role === 'assistant')?.content ?? '';
        let text = '';
        for await (const event of stream$) {
          if (event.type === 'delta') text += String(event.content);
          if (event.type === 'error' && ends(event)) throw new TrellisApiError(0, event.content?.error ?? 'ai_turn_failed', event.content?.message ?? 'The answer failed.', event.content);
        }
        return text;
      },
    };
  }
}
