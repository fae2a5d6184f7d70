import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError, isTrellisError } from '../../../kernel/errors.js';
import { entityManagerServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import type { AiMessage, AiToolDefinition, AiUsage } from '../../../ports/ai-provider.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import type { AiConfig } from '../../ai/ai.config.js';
import { AiGatewayService } from '../../ai/services/ai-gateway.service.js';
import { AiToolService } from '../../ai/services/ai-tool.service.js';
import { aiConfigServiceIdentifier } from '../../ai/tokens.js';
import { CreditService } from '../../billing/services/credit.service.js';
import type { CreditReservation } from '../../billing/entities/credit-reservation.entity.js';
import type { Bot } from '../../bots/entities/bot.entity.js';
import { TeamService } from '../../identity/services/team.service.js';
import { PushService } from '../../realtime/push.service.js';
import { Conversation } from '../entities/conversation.entity.js';
import { Message, type MessageAttrs, type MessageToolCall } from '../entities/message.entity.js';
import { toMessageView, type MessageView } from '../views.js';
import { ConversationService, messageNotFound } from './conversation.service.js';
import { inTransaction } from '../../../kernel/transaction.js';

export interface TurnOptions {
  stream: boolean;
  toolAuto: boolean;
  debug: boolean;
  /** Aborts a turn that is not streamed (the client went away). */
  signal?: AbortSignal;
}

/** What a send, run, rerun or tool answer answers. */
export interface TurnResult {
  convId: string;
  /** `streaming` (output follows over the WebSocket), `completed`, `waiting_tool` (tool answers needed), `step_limit`. */
  status: 'streaming' | 'completed' | 'waiting_tool' | 'step_limit';
  /** Messages this call created, oldest first (a streamed call: the user message and the assistant message being written). */
  messages: MessageView[];
}

/** The types of the `conversation` notification (docs/http/websocket.md). */
export type ConversationEventType = 'message-start' | 'delta' | 'tool-call' | 'tool-result' | 'end' | 'error';

interface Turn {
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
}

const conflict = (code: string, message: string) => new TrellisError('conflict', code, message);

/** The error body of a failed turn as members are sent it and the message stores it (`retry_after` of a rate limit included). */
function errorBody(error: unknown): { error: string; message: string; retry_after?: number } {
  if (!isTrellisError(error) || !error.exposed) return { error: 'ai_turn_failed', message: 'The answer could not be completed.' };
  const retryAfter = error.extra?.retry_after;
  return { error: error.code, message: error.message, ...(typeof retryAfter === 'number' ? { retry_after: retryAfter } : {}) };
}

/**
 * One conversation turn: the bot's model answers the conversation, streaming its output to every
 * member's user WebSocket when asked, running tool calls itself with `tool_auto`, and paying for
 * every model call with a credit reservation settled from the usage the provider reports.
 */
@injectable()
export class ConversationTurnService {
  private readonly inflight = new Map<string, Promise<unknown>>();
  private readonly aborts = new Set<AbortController>();
  private readonly answering = new Map<string, Promise<void>>();

  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(ConversationService) private readonly conversations: ConversationService,
    @inject(AiGatewayService) private readonly gateway: AiGatewayService,
    @inject(AiToolService) private readonly tools: AiToolService,
    @inject(CreditService) private readonly credits: CreditService,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(PushService) private readonly push: PushService,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /** Stores the user's message and lets the bot answer. */
  async send(em: EntityManager, userId: string, convId: string, content: string, options: TurnOptions): Promise<TurnResult> {
    const conversation = await this.conversations.requireMember(em, userId, convId);
    await this.assertNoPendingTools(em, convId);
    return this.start(em, userId, conversation, options, async (tx) => [this.userMessage(tx, conversation.id, userId, content)]);
  }

  /** Like send with a flat body; without content the bot answers the conversation as it stands. */
  async run(em: EntityManager, userId: string, convId: string, content: string | undefined, options: TurnOptions): Promise<TurnResult> {
    const conversation = await this.conversations.requireMember(em, userId, convId);
    await this.assertNoPendingTools(em, convId);
    if (content === undefined && !(await em.count(Message, { conversation: convId, role: { $in: ['user', 'tool'] } }))) {
      throw new TrellisError('bad_request', 'nothing_to_answer', 'The conversation has no message to answer: send content.');
    }
    return this.start(em, userId, conversation, options, async (tx) => (content === undefined ? [] : [this.userMessage(tx, conversation.id, userId, content)]));
  }

  /**
   * Answers again from a message: an assistant message is replaced (it and everything after it are
   * deleted); a user message is kept (its text replaced by `content` when given) and everything
   * after it deleted.
   */
  async rerun(em: EntityManager, userId: string, convId: string, msgId: string, content: string | undefined, options: TurnOptions): Promise<TurnResult> {
    const conversation = await this.conversations.requireMember(em, userId, convId);
    const target = await em.findOne(Message, { id: msgId, conversation: convId });
    if (!target) throw messageNotFound(msgId);
    if (target.role === 'tool') throw new TrellisError('bad_request', 'cannot_rerun_tool_message', 'Rerun a user or assistant message, not a tool result.');
    if (target.role === 'assistant' && content !== undefined) {
      throw new TrellisError('bad_request', 'cannot_edit_assistant_message', 'content replaces the text of a user message; rerun an assistant message without it.');
    }
    return this.start(em, userId, conversation, options, async (tx) => {
      const later = await tx.find(Message, { conversation: convId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
      const index = later.findIndex((m) => m.id === target.id);
      const doomed = later.slice(target.role === 'assistant' ? index : index + 1).map((m) => m.id);
      if (doomed.length) await tx.nativeDelete(Message, { id: { $in: doomed } });
      if (target.role === 'user' && content !== undefined) {
        await tx.nativeUpdate(Message, { id: target.id }, { content, updatedAt: new Date() });
        const updated = await tx.findOneOrFail(Message, { id: target.id }, { refresh: true });
        return [updated];
      }
      return [];
    });
  }

  /**
   * Stores a tool's answer to a call of an assistant message; once every call has one, the bot
   * continues. Answers to one conversation are taken one at a time (in this process), so parallel
   * answers to the last calls cannot all believe another one is still missing.
   */
  async answerTool(em: EntityManager, userId: string, convId: string, msgId: string, toolCallId: string, content: string): Promise<TurnResult> {
    const previous = this.answering.get(convId) ?? Promise.resolve();
    const mine = previous.then(() => this.answerToolNow(em, userId, convId, msgId, toolCallId, content));
    const tail = mine.then(
      () => undefined,
      () => undefined,
    );
    this.answering.set(convId, tail);
    void tail.then(() => {
      if (this.answering.get(convId) === tail) this.answering.delete(convId);
    });
    return mine;
  }

  private async answerToolNow(em: EntityManager, userId: string, convId: string, msgId: string, toolCallId: string, content: string): Promise<TurnResult> {
    const conversation = await this.conversations.requireMember(em, userId, convId);
    const assistant = await em.findOne(Message, { id: msgId, conversation: convId }, { refresh: true });
    if (!assistant) throw messageNotFound(msgId);
    const call = assistant.role === 'assistant' ? assistant.toolCalls?.find((c) => c.id === toolCallId) : undefined;
    if (!call) throw new TrellisError('not_found', 'tool_call_not_found', `Message ${msgId} has no tool call ${toolCallId}.`);
    const answered = await em.find(Message, { conversation: convId, role: 'tool', toolCallId: { $in: assistant.toolCalls!.map((c) => c.id) } });
    if (assistant.status !== 'waiting_tool' || answered.some((m) => m.toolCallId === toolCallId)) {
      throw conflict('tool_call_answered', `Tool call ${toolCallId} already has an answer.`);
    }
    const store = (tx: EntityManager) =>
      tx.create(Message, {
        id: this.ids.next(),
        conversation: tx.getReference(Conversation, convId),
        role: 'tool',
        content,
        status: 'completed',
        authorId: userId,
        attrs: {},
        toolCalls: null,
        toolCallId,
        toolName: call.name,
        usage: null,
        error: null,
        debug: null,
      } as unknown as Message);
    if (answered.length + 1 < assistant.toolCalls!.length) {
      const message = store(em);
      await em.flush();
      return { convId, status: 'waiting_tool', messages: [toMessageView(message)] };
    }
    const attrs = assistant.attrs ?? {};
    const options: TurnOptions = { stream: attrs.stream === true, toolAuto: attrs.tool_auto === true, debug: attrs.isDebug === true };
    return this.start(em, userId, conversation, options, async (tx) => {
      const message = store(tx);
      await tx.nativeUpdate(Message, { id: assistant.id }, { status: 'completed', updatedAt: new Date() });
      return [message];
    });
  }

  /** Aborts every turn in progress and waits for them (kernel stop). */
  async stopAll(): Promise<void> {
    for (const abort of this.aborts) abort.abort(new TrellisError('unavailable', 'shutting_down', 'The server is stopping.'));
    await Promise.allSettled([...this.inflight.values()]);
  }

  private userMessage(em: EntityManager, convId: string, userId: string, content: string): Message {
    return em.create(Message, {
      id: this.ids.next(),
      conversation: em.getReference(Conversation, convId),
      role: 'user',
      content,
      status: 'completed',
      authorId: userId,
      attrs: {},
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      usage: null,
      error: null,
      debug: null,
    } as unknown as Message);
  }

  private async assertNoPendingTools(em: EntityManager, convId: string): Promise<void> {
    const pending = await em.findOne(Message, { conversation: convId, status: 'waiting_tool' }, { fields: ['id'] });
    if (pending) throw conflict('tool_answers_pending', `Message ${pending.id} waits for tool answers (POST .../messages/${pending.id}/tool) before the conversation can continue.`);
  }

  /**
   * Checks everything that can fail before a model is called (bot, model, provider, a turn already
   * running, credits), then stores what `prepare` writes with the first assistant message, and runs
   * the turn: awaited, or in the background when streamed.
   */
  private async start(em: EntityManager, userId: string, conversation: Conversation, options: TurnOptions, prepare: (tx: EntityManager) => Promise<Message[]>): Promise<TurnResult> {
    const bot = conversation.bot;
    if (!bot) throw new TrellisError('bad_request', 'conversation_has_no_bot', 'The conversation has no bot to answer: create it with a botId.');
    await em.populate(conversation, ['bot']);
    const modelId = typeof bot.conf.modelId === 'string' ? bot.conf.modelId : null;
    if (!modelId) throw new TrellisError('bad_request', 'bot_has_no_model', 'The bot names no AI model (conf.modelId).');
    try {
      await this.gateway.check(em, bot.owner.id, modelId);
    } catch (error) {
      if (isTrellisError(error) && error.code === 'model_not_found') throw new TrellisError('bad_request', 'bot_model_missing', "The bot's AI model no longer exists: update the bot's conf.modelId.");
      throw error;
    }
    const team = await this.teams.firstTeam(em, userId);
    if (!team) throw new TrellisError('bad_request', 'no_team_associated', 'You belong to no team whose credits could pay for the answer.');
    // Claimed before the first await that follows, so two parallel sends cannot both start a turn.
    if (this.inflight.has(conversation.id)) throw conflict('turn_in_progress', 'The bot is already answering in this conversation; wait for the end notification.');
    let settled!: () => void;
    const claim = new Promise<void>((resolve) => (settled = resolve));
    this.inflight.set(conversation.id, claim);
    try {
      return await this.begin(em, userId, conversation, bot, modelId, team.team.id, options, prepare);
    } finally {
      // The turn's own entry replaced the claim once it started; a turn that never started leaves it.
      if (this.inflight.get(conversation.id) === claim) this.inflight.delete(conversation.id);
      settled();
    }
  }

  private async begin(
    em: EntityManager,
    userId: string,
    conversation: Conversation,
    bot: Bot,
    modelId: string,
    teamId: string,
    options: TurnOptions,
    prepare: (tx: EntityManager) => Promise<Message[]>,
  ): Promise<TurnResult> {
    const toolIds = Array.isArray(bot.conf.toolIds) ? (bot.conf.toolIds as unknown[]).filter((id): id is string => typeof id === 'string') : [];
    const attrs: MessageAttrs = { stream: options.stream, tool_auto: options.toolAuto, isDebug: options.debug };
    const turn: Turn = {
      conversation,
      bot,
      modelId,
      toolIds,
      members: this.conversations.memberIds(conversation),
      userId,
      teamId,
      options,
      attrs,
      abort: new AbortController(),
    };
    const reservation = await this.reserve(em, turn);
    let created: Message[];
    let assistant: Message;
    try {
      [created, assistant] = await inTransaction(em, async (tx) => {
        const written = await prepare(tx);
        const first = this.assistantMessage(tx, conversation.id, attrs);
        return [written, first] as const;
      });
    } catch (error) {
      await this.credits.release(em, reservation.id, 'the conversation turn did not start').catch(() => undefined);
      throw error;
    }
    const views = created.map(toMessageView);
    if (options.signal) options.signal.addEventListener('abort', () => turn.abort.abort(options.signal!.reason), { once: true });
    this.aborts.add(turn.abort);
    const work = this.loop(turn, reservation, assistant.id).finally(() => {
      this.inflight.delete(conversation.id);
      this.aborts.delete(turn.abort);
    });
    this.inflight.set(conversation.id, work.catch(() => undefined));
    if (options.stream) {
      // The members got an `error` notification; unexpected errors were logged by the loop. Only the
      // code here: a provider error's cause is the vendor's response and is not worth a log line.
      work.catch((error) => this.log.info({ convId: conversation.id, code: isTrellisError(error) ? error.code : 'internal' }, 'streamed conversation turn ended with an error'));
      return { convId: conversation.id, status: 'streaming', messages: [...views, toMessageView(assistant)] };
    }
    const outcome = await work;
    return { convId: conversation.id, status: outcome.status, messages: [...views, ...outcome.messages] };
  }

  private assistantMessage(em: EntityManager, convId: string, attrs: MessageAttrs): Message {
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

  private async reserve(em: EntityManager, turn: Turn): Promise<CreditReservation> {
    const amount = await this.gateway.estimate(turn.modelId);
    return this.credits.reserve(em, { teamId: turn.teamId, amount, reason: `conversation ${turn.conversation.id}`, userId: turn.userId });
  }

  /** Model calls until the model answers without tool calls, waits for tool answers, or the step limit is reached. */
  private async loop(turn: Turn, firstReservation: CreditReservation, firstAssistantId: string): Promise<{ status: TurnResult['status']; messages: MessageView[] }> {
    const em = this.root.fork();
    const convId = turn.conversation.id;
    const created: MessageView[] = [];
    let reservation: CreditReservation | null = firstReservation;
    let assistantId = firstAssistantId;
    let definitions: AiToolDefinition[] | undefined;
    // What the members were shown of the message being written: stored with the lease, and on failure.
    let text = '';
    const lease = this.lease(() => ({ id: assistantId, content: text }));
    try {
      if (turn.toolIds.length) definitions = await this.gateway.toolDefinitions({ userId: turn.bot.owner.id, toolIds: turn.toolIds });
      for (let step = 1; ; step++) {
        if (step > 1) {
          reservation = await this.reserve(em, turn);
          const next = this.assistantMessage(em, convId, turn.attrs);
          await em.flush();
          assistantId = next.id;
        }
        await this.notify(turn, 'message-start', assistantId, { role: 'assistant', step });
        const messages = await this.history(em, turn, assistantId);
        text = '';
        const calls: MessageToolCall[] = [];
        let usage: AiUsage = { inputTokens: 0, outputTokens: 0 };
        for await (const part of this.gateway.chat({
          userId: turn.bot.owner.id,
          modelId: turn.modelId,
          request: { messages, tools: definitions?.length ? definitions : undefined, signal: turn.abort.signal, threadId: convId },
        })) {
          if (part.type === 'text-delta') {
            text += part.delta;
            await this.notify(turn, 'delta', assistantId, part.delta);
          } else if (part.type === 'tool-call') {
            calls.push({ id: part.toolCallId, name: part.toolName, input: part.input });
          } else if (part.type === 'finish') {
            usage = part.usage;
          }
        }
        const price = await this.gateway.price(turn.modelId, usage);
        const charged = Math.min(price, reservation!.amount);
        await this.credits.settle(em, reservation!.id, charged, `${usage.inputTokens} input and ${usage.outputTokens} output tokens`);
        reservation = null;
        const waiting = calls.length > 0 && !turn.options.toolAuto;
        const assistant = await em.findOneOrFail(Message, { id: assistantId });
        assistant.content = text;
        assistant.toolCalls = calls.length ? calls : null;
        assistant.usage = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, credits: charged };
        assistant.status = waiting ? 'waiting_tool' : 'completed';
        assistant.heartbeatAt = null;
        if (turn.options.debug) {
          assistant.debug = { step, modelId: turn.modelId, messages: messages.length, tools: (definitions ?? []).map((d) => d.name), price, reservedCredits: firstReservation.amount };
        }
        await em.flush();
        created.push(toMessageView(assistant));
        for (const call of calls) await this.notify(turn, 'tool-call', assistantId, { toolCallId: call.id, toolName: call.name, input: call.input });
        if (calls.length === 0 || waiting) {
          await this.notify(turn, 'end', assistantId, { status: assistant.status, usage: assistant.usage });
          return { status: waiting ? 'waiting_tool' : 'completed', messages: created };
        }
        for (const call of calls) {
          let result: unknown;
          try {
            result = await this.gateway.callTool({ userId: turn.bot.owner.id, toolIds: turn.toolIds, toolName: call.name, args: call.input, signal: turn.abort.signal });
          } catch (error) {
            if (turn.abort.signal.aborted) throw error;
            result = { error: isTrellisError(error) ? error.code : 'tool_call_failed', message: isTrellisError(error) && error.exposed ? error.message : 'The tool failed.' };
          }
          const toolMessage = em.create(Message, {
            id: this.ids.next(),
            conversation: em.getReference(Conversation, convId),
            role: 'tool',
            content: typeof result === 'string' ? result : JSON.stringify(result ?? null),
            status: 'completed',
            authorId: null,
            attrs: {},
            toolCalls: null,
            toolCallId: call.id,
            toolName: call.name,
            usage: null,
            error: null,
            debug: null,
          } as unknown as Message);
          await em.flush();
          created.push(toMessageView(toolMessage));
          await this.notify(turn, 'tool-result', toolMessage.id, { toolCallId: call.id, toolName: call.name, result });
        }
        if (step >= this.config.toolAutoMaxSteps) {
          const error = { error: 'tool_step_limit', message: `The model was called ${step} times (ai.toolAutoMaxSteps) and still asked for tools.` };
          await this.notify(turn, 'error', assistantId, error);
          await this.notify(turn, 'end', assistantId, { status: 'step_limit', usage: assistant.usage });
          return { status: 'step_limit', messages: created };
        }
      }
    } catch (error) {
      lease.stop();
      if (reservation) await this.credits.release(this.root.fork(), reservation.id, 'the model call failed').catch(() => undefined);
      const body = errorBody(error);
      // The error reached here through the AI gateway, which removed secrets and request bodies from it.
      if (!isTrellisError(error)) this.log.error({ err: error, convId }, 'conversation turn failed');
      try {
        // What the members were shown stays, marked failed.
        await this.root.fork().nativeUpdate(Message, { id: assistantId }, { status: 'error', content: text, error: body, heartbeatAt: null, updatedAt: new Date() });
      } catch {
        /* the conversation may have been deleted meanwhile */
      }
      await this.notify(turn, 'error', assistantId, body);
      throw error;
    } finally {
      lease.stop();
    }
  }

  /**
   * Renews the lease of the message being written every `ai.turns.heartbeatMs`, storing the text
   * written so far, so that a turn whose process goes away is found (`recoverInterrupted`) with
   * what its readers were shown.
   */
  private lease(current: () => { id: string; content: string }): { stop(): void } {
    let writing: Promise<unknown> = Promise.resolve();
    const timer = setInterval(() => {
      const { id, content } = current();
      writing = writing
        .then(() => this.root.fork().nativeUpdate(Message, { id, status: 'streaming' }, { content, heartbeatAt: new Date() }))
        .catch((error: unknown) => this.log.warn({ err: error, msgId: id }, 'could not renew the lease of a conversation turn'));
    }, this.config.turns.heartbeatMs);
    timer.unref?.();
    return { stop: () => clearInterval(timer) };
  }

  /**
   * Closes the turns of processes that went away: every `streaming` assistant message whose lease
   * was not renewed for `ai.turns.staleAfterMs` becomes `error` (`ai_turn_interrupted`) with the
   * text stored so far, and its members are told. Run at start-up and periodically; two processes
   * sweeping at once close each message once. Returns how many were closed.
   */
  async recoverInterrupted(): Promise<number> {
    const em = this.root.fork();
    const staleBefore = new Date(Date.now() - this.config.turns.staleAfterMs);
    const lost = await em.find(
      Message,
      { status: 'streaming', role: 'assistant', $or: [{ heartbeatAt: { $lt: staleBefore } }, { heartbeatAt: null, updatedAt: { $lt: staleBefore } }] },
      { limit: 100, orderBy: { createdAt: 'asc', id: 'asc' }, populate: ['conversation'] },
    );
    const body = { error: 'ai_turn_interrupted', message: 'The answer was cut off: the server writing it stopped. Send the message again or rerun it.' };
    let closed = 0;
    for (const message of lost) {
      const claimed = await em.nativeUpdate(Message, { id: message.id, status: 'streaming', heartbeatAt: message.heartbeatAt }, { status: 'error', error: body, heartbeatAt: null, updatedAt: new Date() });
      if (!claimed) continue;
      closed++;
      await this.notify({ conversation: message.conversation, members: this.conversations.memberIds(message.conversation) }, 'error', message.id, body);
    }
    if (closed) this.log.warn({ messages: closed }, 'conversation turns cut by a stopped process were marked failed');
    return closed;
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

  /** Pushes one `conversation` notification to every member; a failed push never fails the turn. */
  async notify(turn: Pick<Turn, 'members' | 'conversation'>, type: ConversationEventType, msgId: string, content: unknown): Promise<void> {
    for (const userId of turn.members) {
      try {
        await this.push.toUser(userId, 'conversation', { convId: turn.conversation.id, msgId, type, content });
      } catch (error) {
        this.log.warn({ err: error, convId: turn.conversation.id, type }, 'conversation push failed');
      }
    }
  }
}
