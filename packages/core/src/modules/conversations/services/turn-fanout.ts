import { inject, injectable } from 'inversify';
import { PushHub } from '../../realtime/index.js';
import { TurnLog, type ConversationEventMessage } from './turn-log.js';

/**
 * The members' sockets read the conversation log's fan-out: one PubSub message per stored batch of
 * a conversation reaches every process once, and each hands its events as `conversation`
 * notifications to the sockets of the members it holds (`turn-end` stays in the log).
 */
@injectable()
export class TurnFanout {
  private stopListening: (() => void) | null = null;

  constructor(
    @inject(TurnLog) private readonly log: TurnLog,
    @inject(PushHub) private readonly hub: PushHub,
  ) {}

  async start(): Promise<void> {
    this.stopListening ??= await this.log.onEvery((message) => this.deliver(message));
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = null;
  }

  private deliver(message: ConversationEventMessage): void {
    for (const userId of message.members) {
      for (const event of message.events) {
        if (event.type === 'turn-end') continue;
        if (!this.hub.deliverLocal('user', userId, 'conversation', { convId: message.convId, msgId: event.msgId, type: event.type, content: event.content })) break;
      }
    }
  }
}
