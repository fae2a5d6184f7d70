import type { EntityManager } from '@mikro-orm/core';
import type { Logger } from 'pino';
import { isTrellisError, TrellisError } from '../../kernel/errors.js';
import type { AiMessage, AiToolDefinition, AiUsage } from '../../ports/ai-provider.js';
import { AiGatewayService } from '../ai/index.js';
import { CreditService } from '../billing/index.js';
import { BotService } from '../bots/index.js';
import { TeamService } from '../identity/index.js';
import type { CompletionPart, PreparedCompletion } from './completion.js';

type Get = <T>(id: new (...args: any[]) => T) => T;

export interface BotCompletionInput {
  userId: string;
  botId: string;
  messages: AiMessage[];
  tools?: AiToolDefinition[];
  temperature?: number;
  maxOutputTokens?: number;
  signal: AbortSignal;
}

const finishReason = { stop: 'stop', length: 'length', 'tool-calls': 'tool_calls', 'content-filter': 'content_filter', error: 'stop', other: 'stop' } as const;

/**
 * One model call of a bot of the caller, stateless: the bot's prompt, then the client's messages
 * and tools. Like a conversation turn it holds credits from the caller's first team before the
 * model is called and settles them from the usage the provider reports (released on failure).
 * Tool calls go back to the client; the bot's own AI tools are not offered here.
 */
export async function prepareBotCompletion(em: EntityManager, get: Get, log: Logger, input: BotCompletionInput): Promise<PreparedCompletion> {
  const bot = await get(BotService).get(em, input.userId, input.botId);
  const modelId = typeof bot.conf.modelId === 'string' ? bot.conf.modelId : null;
  if (!modelId) throw new TrellisError('bad_request', 'bot_has_no_model', 'The bot names no AI model (conf.modelId).');
  const gateway = get(AiGatewayService);
  const credits = get(CreditService);
  try {
    await gateway.check(em, input.userId, modelId);
  } catch (error) {
    if (isTrellisError(error) && error.code === 'model_not_found') throw new TrellisError('bad_request', 'bot_model_missing', "The bot's AI model no longer exists: update the bot's conf.modelId.");
    throw error;
  }
  const team = await get(TeamService).firstTeam(em, input.userId);
  if (!team) throw new TrellisError('bad_request', 'no_team_associated', 'You belong to no team whose credits could pay for the answer.');
  const amount = await gateway.estimate(modelId);
  const reservation = await credits.reserve(em, { teamId: team.team.id, amount, reason: `bot ${bot.id} (OpenAI-compatible API)`, userId: input.userId });
  const prompt = typeof bot.conf.prompt === 'string' && bot.conf.prompt ? [{ role: 'system' as const, content: bot.conf.prompt }] : [];
  const fork = em.fork();

  async function* parts(): AsyncGenerator<CompletionPart> {
    let usage: AiUsage | null = null;
    try {
      for await (const part of gateway.chat({
        userId: input.userId,
        modelId: modelId!,
        request: { messages: [...prompt, ...input.messages], tools: input.tools, temperature: input.temperature, maxOutputTokens: input.maxOutputTokens, signal: input.signal },
      })) {
        if (part.type === 'text-delta') yield { type: 'text', delta: part.delta };
        else if (part.type === 'tool-call') yield part;
        else {
          usage = part.usage;
          const price = await gateway.price(modelId!, usage);
          await credits.settle(fork, reservation.id, Math.min(price, amount), `${usage.inputTokens} input and ${usage.outputTokens} output tokens`);
          yield { type: 'finish', reason: finishReason[part.finishReason], usage };
        }
      }
    } finally {
      if (!usage) await credits.release(fork, reservation.id, 'the model call did not finish').catch((error: unknown) => log.warn({ err: error }, 'could not release a credit hold'));
    }
  }
  return { parts: parts() };
}
