import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError, isTrellisError } from '../../../kernel/errors.js';
import { entityManagerServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import type { AiMessage } from '../../../ports/ai-provider.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { type AiConfig, AiGatewayService, modelCallFrame, runModelTurn, type ModelCallCredits, type ModelStep, aiConfigServiceIdentifier } from '../../ai/index.js';
import { type CreditHold, CreditService } from '../../billing/index.js';
import { inTransaction } from '../../../kernel/transaction.js';
import type { Bot } from '../../bots/index.js';
import { Conversation } from '../entities/conversation.entity.js';
import { Message, type MessageAttrs, type MessageStatus } from '../entities/message.entity.js';
import { toMessageView, type MessageView } from '../views.js';
import { TurnClaims } from './turn-claims.js';
import type { TurnWriter } from './turn-log.js';

export interface TurnOptions {
  stream: boolean;
  toolAuto: boolean;
  debug: boolean;
  /** Aborts a turn that is not streamed (the client went away). */
  signal?: AbortSignal;
}

/** How a turn ended (the `turn-end` event's status). */
export type TurnEndStatus = 'completed' | 'waiting_tool' | 'step_limit' | 'failed' | 'stopped';

/** One running turn: what it answers with, who is told, who pays. */
export interface Turn {
  id: string;
  conversation: Conversation;
  bot: Bot;
  modelId: string;
  toolIds: string[];
  members: string[];
  /** Who pays: the caller. */
  userId: string;
  teamId: string;
  options: TurnOptions;
  attrs: MessageAttrs;
  abort: AbortController;
  log: TurnWriter;
}

/** The reason a stopped turn is aborted with. */
export const turnStopped = () => new TrellisError('conflict', 'turn_stopped', 'The turn was stopped.', { expose: true });
const isStop = (reason: unknown) => isTrellisError(reason) && reason.code === 'turn_stopped';

/** The error body of a failed turn as members are sent it and the message stores it (`retry_after` of a rate limit included). */
export function errorBody(error: unknown): { error: string; message: string; retry_after?: number } {
  if (!isTrellisError(error) || !error.exposed) return { error: 'ai_turn_failed', message: 'The answer could not be completed.' };
  const retryAfter = error.extra?.retry_after;
  return { error: error.code, message: error.message, ...(typeof retryAfter === 'number' ? { retry_after: retryAfter } : {}) };
}

export interface TurnOutcome {
  status: TurnEndStatus;
  messages: MessageView[];
  /** The last assistant message and its usage. */
  lastId: string;
  usage: { inputTokens: number; outputTokens: number; credits: number } | null;
  /** The turn's last events (`end`, `error`): stored with its `turn-end` as the conversation is released. */
  tail: TailEvent[];
  error?: unknown;
}

export interface TailEvent {
  type: 'end' | 'error';
  msgId: string;
  content: unknown;
}

/**
 * Runs one conversation turn on the model turn (`runModelTurn`): every event goes to the turn's
 * log (from which members' sockets and SSE readers are served), every message to the database,
 * and the stored text of an assistant message is always the text its `delta`s carried.
 */
@injectable()
export class TurnRunner {
  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(AiGatewayService) private readonly gateway: AiGatewayService,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(TurnClaims) private readonly claims: TurnClaims,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /**
   * A credit reservation for one model call of the turn: the run hot path's hold (prepared
   * statements in a short transaction of its own; the ORM's `reserve` when purchased credits are
   * needed or the team has no balance yet), so a send holds SQLite's one connection only for its
   * statements.
   */
  reserve(em: EntityManager, turn: Pick<Turn, 'modelId' | 'teamId' | 'userId' | 'conversation'>): Promise<CreditHold> {
    return this.gateway
      .estimate(turn.modelId)
      .then((amount) => inTransaction(em.fork(), (tx) => this.credits.hold(tx, { teamId: turn.teamId, amount, reason: `conversation ${turn.conversation.id}`, userId: turn.userId })));
  }

  async release(em: EntityManager, holdId: string, reason: string): Promise<void> {
    await this.credits.release(em, holdId, reason).catch(() => undefined);
  }

  assistantMessage(em: EntityManager, convId: string, attrs: MessageAttrs): Message {
    return em.create(Message, {
      id: this.ids.next(),
      conversation: em.getReference(Conversation, convId),
      role: 'assistant',
      content: '',
      status: 'streaming',
      authorId: null,
      attrs,
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      usage: null,
      error: null,
      debug: null,
      heartbeatAt: new Date(),
    } as unknown as Message);
  }

  /** Runs the turn to its end; never throws: a failure is in the outcome (and was told to the members). */
  async run(turn: Turn, firstHold: CreditHold, firstAssistantId: string): Promise<TurnOutcome> {
    const em = this.root.fork();
    const convId = turn.conversation.id;
    const created: MessageView[] = [];
    let assistantId = firstAssistantId;
    let text = '';
    let lastUsage: TurnOutcome['usage'] = null;
    const tail: TailEvent[] = [];
    const lease = this.lease(turn, () => ({ id: assistantId, content: text }));
    const credits: ModelCallCredits<CreditHold> = {
      reserve: async (step) => (step === 1 ? firstHold : this.reserve(em, turn)),
      settle: async (hold, usage) => {
        const charged = Math.min(await this.gateway.price(turn.modelId, usage), hold.amount);
        await this.credits.settleOnly(this.root.fork(), hold.id, charged, `${usage.inputTokens} input and ${usage.outputTokens} output tokens`);
        return charged;
      },
      release: async (hold, reason) => void (await this.credits.release(this.root.fork(), hold.id, reason)),
    };
    try {
      const history = await this.history(em, turn, assistantId);
      // Its calls are recorded as this turn's (docs/observability.md).
      const outcome = await runModelTurn({
        scope: modelCallFrame({ conversationId: convId, turnId: turn.id, teamId: turn.teamId, userId: turn.userId }),
        gateway: this.gateway,
        userId: turn.bot.owner.id,
        modelId: turn.modelId,
        messages: history,
        toolIds: turn.toolIds,
        signal: turn.abort.signal,
        threadId: convId,
        maxSteps: turn.options.toolAuto ? this.config.toolAutoMaxSteps : 1,
        runTools: turn.options.toolAuto,
        credits,
        sink: {
          stepStart: async (step) => {
            if (step > 1) {
              const next = this.assistantMessage(em, convId, turn.attrs);
              await em.flush();
              assistantId = next.id;
            }
            text = '';
            await turn.log.append('message-start', assistantId, { role: 'assistant', step });
          },
          text: (delta) => {
            text += delta;
            return turn.log.append('delta', assistantId, delta);
          },
          stepEnd: async (step) => {
            const message = await this.finishStep(em, turn, assistantId, step, firstHold.amount);
            lastUsage = message.usage;
            created.push(toMessageView(message));
            for (const call of step.calls) await turn.log.append('tool-call', assistantId, { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input });
            if (!step.calls.length || !turn.options.toolAuto) tail.push({ type: 'end', msgId: assistantId, content: { status: message.status, usage: message.usage } });
          },
          toolResult: async (call, result) => {
            const message = this.toolMessage(em, convId, call.toolCallId, call.toolName, result);
            await em.flush();
            created.push(toMessageView(message));
            await turn.log.append('tool-result', message.id, { toolCallId: call.toolCallId, toolName: call.toolName, result });
          },
        },
      });
      if (outcome.status === 'step_limit') {
        const error = { error: 'tool_step_limit', message: `The model was called ${outcome.steps.length} times (ai.toolAutoMaxSteps) and still asked for tools.` };
        tail.push({ type: 'error', msgId: assistantId, content: error }, { type: 'end', msgId: assistantId, content: { status: 'step_limit', usage: lastUsage } });
      }
      return { status: outcome.status, messages: created, lastId: assistantId, usage: lastUsage, tail };
    } catch (error) {
      lease.stop();
      const stopped = turn.abort.signal.aborted && isStop(turn.abort.signal.reason);
      const body = errorBody(error);
      // The error reached here through the AI gateway, which removed secrets and request bodies from it.
      if (!isTrellisError(error) && !stopped) this.log.error({ err: error, convId }, 'conversation turn failed');
      // What the members were shown stays: every delta appended is in `text`.
      const status: MessageStatus = stopped ? 'stopped' : 'error';
      try {
        await this.root.fork().nativeUpdate(Message, { id: assistantId, status: 'streaming' }, { status, content: text, error: stopped ? null : body, heartbeatAt: null, updatedAt: new Date() });
        const stored = await this.root.fork().findOne(Message, { id: assistantId });
        if (stored && !created.some((m) => m.id === assistantId)) created.push(toMessageView(stored));
      } catch {
        /* the conversation may have been deleted meanwhile */
      }
      tail.push(stopped ? { type: 'end', msgId: assistantId, content: { status: 'stopped', usage: null } } : { type: 'error', msgId: assistantId, content: body });
      return { status: stopped ? 'stopped' : 'failed', messages: created, lastId: assistantId, usage: lastUsage, tail, error };
    } finally {
      lease.stop();
    }
  }

  private async finishStep(em: EntityManager, turn: Turn, assistantId: string, step: ModelStep, reserved: number): Promise<Message> {
    const waiting = step.calls.length > 0 && !turn.options.toolAuto;
    const message = await em.findOneOrFail(Message, { id: assistantId });
    message.content = step.text;
    message.toolCalls = step.calls.length ? step.calls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })) : null;
    message.usage = { inputTokens: step.usage.inputTokens, outputTokens: step.usage.outputTokens, credits: step.credits };
    message.status = waiting ? 'waiting_tool' : 'completed';
    message.heartbeatAt = null;
    if (turn.options.debug) {
      const tools = turn.toolIds.length ? (await this.gateway.toolDefinitions({ userId: turn.bot.owner.id, toolIds: turn.toolIds })).map((d) => d.name) : [];
      message.debug = { step: step.step, modelId: turn.modelId, messages: step.sent, tools, price: await this.gateway.price(turn.modelId, step.usage), reservedCredits: reserved };
    }
    await em.flush();
    return message;
  }

  toolMessage(em: EntityManager, convId: string, toolCallId: string | null, toolName: string, result: unknown, authorId: string | null = null): Message {
    return em.create(Message, {
      id: this.ids.next(),
      conversation: em.getReference(Conversation, convId),
      role: 'tool',
      content: typeof result === 'string' ? result : JSON.stringify(result ?? null),
      status: 'completed',
      authorId,
      attrs: {},
      toolCalls: null,
      toolCallId,
      toolName,
      usage: null,
      error: null,
      debug: null,
    } as unknown as Message);
  }

  /**
   * Renews, every `ai.turns.heartbeatMs`, the lease of the message being written (with the text
   * written so far) and the turn's hold on the conversation, so that a turn whose process goes
   * away is found (`recoverInterrupted`) with what its readers were shown.
   */
  private lease(turn: Turn, current: () => { id: string; content: string }): { stop(): void } {
    let writing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      const { id, content } = current();
      writing = writing
        .then(() => Promise.all([this.root.fork().nativeUpdate(Message, { id, status: 'streaming' }, { content, heartbeatAt: new Date() }), this.claims.renew(turn.conversation.id, turn.id)]))
        .catch((error: unknown) => this.log.warn({ err: error, msgId: id }, 'could not renew the lease of a conversation turn'));
    }, this.config.turns.heartbeatMs);
    timer.unref?.();
    return { stop: () => clearInterval(timer) };
  }

  /** The conversation as the model reads it: the bot's prompt, then every finished message before `uptoId`. */
  private async history(em: EntityManager, turn: Turn, uptoId: string): Promise<AiMessage[]> {
    const rows = await em.find(Message, { conversation: turn.conversation.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    const out: AiMessage[] = [];
    if (typeof turn.bot.conf.prompt === 'string' && turn.bot.conf.prompt) out.push({ role: 'system', content: turn.bot.conf.prompt });
    for (const m of rows) {
      if (m.id === uptoId) break;
      if (m.status === 'error' || m.status === 'streaming') continue;
      if (m.role === 'user') out.push({ role: 'user', content: m.content });
      else if (m.role === 'assistant') {
        out.push({ role: 'assistant', content: m.content, ...(m.toolCalls?.length ? { toolCalls: m.toolCalls.map((c) => ({ toolCallId: c.id, toolName: c.name, input: c.input })) } : {}) });
      } else if (m.toolCallId) out.push({ role: 'tool', toolCallId: m.toolCallId, toolName: m.toolName ?? 'tool', content: m.content });
      else out.push({ role: 'user', content: `Result of the tool ${m.toolName ?? ''}: ${m.content}` });
    }
    return out;
  }
}
