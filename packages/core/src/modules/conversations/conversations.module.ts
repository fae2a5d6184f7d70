import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { ContainerModule } from 'inversify';
import { defineModule } from '../../kernel/module.js';
import { configServiceIdentifier } from '../../kernel/tokens.js';
import type { AiConfig } from '../ai/index.js';
import { ConversationEventBatchSchema } from './entities/conversation-event.entity.js';
import { ConversationMemberSchema } from './entities/conversation-member.entity.js';
import { ConversationSchema } from './entities/conversation.entity.js';
import { MessageSchema } from './entities/message.entity.js';
import { migrations } from './migrations/index.js';
import { conversationRoutes } from './routes.js';
import { ConversationTurnService } from './services/conversation-turn.service.js';
import { ConversationService } from './services/conversation.service.js';
import { ToolExecutionService } from './services/tool-execution.service.js';
import { TurnClaims } from './services/turn-claims.js';
import { TurnFanout } from './services/turn-fanout.js';
import { TurnLog } from './services/turn-log.js';
import { TurnRunner } from './services/turn-runner.js';

/**
 * Conversations and messages (`/conversation`): members, the bot's turns (one at a time, recorded
 * in the conversation's event log, streamed over the user WebSocket and as SSE, tool calls run
 * automatically or answered by the client, paid in credits, stoppable) and the AI tool execute
 * endpoint, which writes into conversations.
 */
export const conversationsModule = defineModule({
  name: 'conversations',
  dependsOn: ['identity', 'bots', 'ai', 'billing', 'realtime'],
  entities: [ConversationSchema, ConversationMemberSchema, MessageSchema, ConversationEventBatchSchema],
  migrations,
  container: () =>
    new ContainerModule(({ bind }) => {
      bind(ConversationService).toSelf();
      bind(ConversationTurnService).toSelf();
      bind(ToolExecutionService).toSelf();
      bind(TurnLog).toSelf();
      bind(TurnClaims).toSelf();
      bind(TurnRunner).toSelf();
      bind(TurnFanout).toSelf();
    }),
  // OAuth access tokens and scoped API keys reach conversations with the spec's `chat:completions` scope.
  routes: scopeRoutes(conversationRoutes, { read: ['chat:completions'], write: ['chat:completions'] }),
  jobs: [
    {
      // Turns whose process went away (a crash) are closed with the text they had stored.
      name: 'conversations.recover-interrupted',
      intervalMs: (config) => Math.max(500, Math.floor((config as unknown as { ai: AiConfig }).ai.turns.staleAfterMs / 2)),
      async run(ctx) {
        await ctx.get(ConversationTurnService).recoverInterrupted();
      },
    },
    {
      // The turn log keeps `ai.turns.logRetentionHours` of events (each conversation's newest batch stays).
      name: 'conversations.prune-turn-log',
      intervalMs: () => 3_600_000,
      async run(ctx) {
        const hours = (ctx.get(configServiceIdentifier) as unknown as { ai: AiConfig }).ai.turns.logRetentionHours;
        const log = ctx.get(TurnLog);
        const cutoff = new Date(ctx.now.getTime() - hours * 3_600_000);
        while ((await log.prune(cutoff)) > 0);
      },
    },
  ],
  async onStart(ctx) {
    await ctx.get(TurnFanout).start();
    await ctx.get(ConversationTurnService).listen();
    await ctx.get(ConversationTurnService).recoverInterrupted();
  },
  async onStop(ctx) {
    await ctx.get(ConversationTurnService).stopAll();
    ctx.get(TurnFanout).stop();
    await ctx.get(TurnLog).close();
  },
});
