import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError, isTrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import '../hooks.js';
import { entityManagerServiceIdentifier, hooksServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { type AiConfig, AiGatewayService, aiConfigServiceIdentifier } from '../../ai/index.js';
import type { Bot } from '../../bots/index.js';
import { TeamService } from '../../identity/index.js';
import { PushService } from '../../realtime/index.js';
import { Conversation } from '../entities/conversation.entity.js';
import type { ConversationEventRecord } from '../entities/conversation-event.entity.js';
import { Message, type MessageAttrs } from '../entities/message.entity.js';
import { toMessageView, type TurnStopView, type TurnView } from '../views.js';
import { ConversationService, messageNotFound } from './conversation.service.js';
import { TurnClaims } from './turn-claims.js';
import { TurnLog } from './turn-log.js';
import { TurnRunner, turnStopped, type Turn, type TurnOptions, type TurnOutcome } from './turn-runner.js';

export type { TurnOptions } from './turn-runner.js';

/** What a send, run, rerun or tool answer answers: declared by `turnSchema`. */
export type TurnResult = TurnView;

/** The types of the `conversation` notification (docs/http/websocket.md). */
export type ConversationEventType = 'message-start' | 'delta' | 'tool-call' | 'tool-result' | 'end' | 'error';

/** The topic a stop travels on to the process running the turn. */
const stopTopic = 'conversations:stop';

const conflict = (code: string, message: string) => new TrellisError('conflict', code, message);

/**
 * Conversation turns: the bot's model answers the conversation (`runModelTurn` through the
 * `TurnRunner`), one turn at a time per conversation across processes (`TurnClaims`), every event
 * recorded in the conversation's log (`TurnLog`), from which members' sockets and SSE readers are
 * served; a turn can be stopped from any process.
 */
@injectable()
export class ConversationTurnService {
  private readonly running = new Map<string, { turn: Turn; work: Promise<unknown> }>();
  private readonly answering = new Map<string, Promise<void>>();
  private unsubscribe: (() => Promise<void>) | null = null;

  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(ConversationService) private readonly conversations: ConversationService,
    @inject(AiGatewayService) private readonly gateway: AiGatewayService,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(PushService) private readonly push: PushService,
    @inject(TurnRunner) private readonly runner: TurnRunner,
    @inject(TurnClaims) private readonly claims: TurnClaims,
    @inject(TurnLog) private readonly log: TurnLog,
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(loggerServiceIdentifier) private readonly logger: Logger,
  ) {}

  /** Listens for stops of turns this process runs (module start). */
  async listen(): Promise<void> {
    this.unsubscribe ??= await this.pubsub.subscribe(stopTopic, (raw) => {
      try {
        const { turnId } = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as { turnId?: string };
        if (typeof turnId === 'string') this.running.get(turnId)?.turn.abort.abort(turnStopped());
      } catch {
        /* not a stop */
      }
    });
  }

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
    const store = (tx: EntityManager) => this.runner.toolMessage(tx, convId, toolCallId, call.name, content, userId);
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

  /**
   * Stops the conversation's running turn, wherever it runs: its provider stream is aborted, the
   * text written so far stays (status `stopped`), the unused credits are released. Waits up to
   * `waitMs` for the turn to end; answers its id and whether it ended.
   */
  async stop(em: EntityManager, userId: string, convId: string, waitMs = 10_000): Promise<TurnStopView> {
    await this.conversations.requireMember(em, userId, convId);
    const turnId = await this.claims.current(em, convId);
    if (!turnId) throw conflict('no_turn_in_progress', 'The bot is not answering in this conversation: there is no turn to stop.');
    const local = this.running.get(turnId);
    if (local) local.turn.abort.abort(turnStopped());
    else await this.pubsub.publish(stopTopic, JSON.stringify({ convId, turnId }));
    const deadline = Date.now() + waitMs;
    for (;;) {
      if ((await this.claims.current(em, convId)) !== turnId) return { convId, turnId, status: 'stopped' };
      if (Date.now() > deadline) return { convId, turnId, status: 'stopping' };
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * The conversation's events after `after` as batches, then the live tail to the end of a turn;
   * null when there is nothing to send (no event after `after` and no turn running).
   */
  async events(em: EntityManager, userId: string, convId: string, after: number, signal?: AbortSignal): Promise<AsyncIterable<ConversationEventRecord[]> | null> {
    await this.conversations.requireMember(em, userId, convId);
    if (!(await this.claims.current(em, convId)) && after >= (await this.log.lastSeq(em, convId))) return null;
    return this.log.follow(convId, { after, signal });
  }

  /** Aborts every turn in progress and waits for them (kernel stop). */
  async stopAll(): Promise<void> {
    for (const { turn } of this.running.values()) turn.abort.abort(new TrellisError('unavailable', 'shutting_down', 'The server is stopping.'));
    await Promise.allSettled([...this.running.values()].map((r) => r.work));
    await this.unsubscribe?.().catch(() => undefined);
    this.unsubscribe = null;
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
   * Checks everything that can fail before a model is called (bot, model, provider, credits),
   * takes the conversation for the turn (409 `turn_in_progress` when another turn holds it, in
   * any process), stores what `prepare` writes with the first assistant message, and runs the
   * turn: awaited, or in the background when streamed.
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
    const turnId = this.ids.next();
    await this.claims.claim(conversation.id, turnId);
    let started = false;
    try {
      const result = this.begin(em, turnId, userId, conversation, bot, modelId, team.team.id, options, prepare, () => (started = true));
      return await result;
    } finally {
      if (!started) await this.claims.release(conversation.id, turnId).catch(() => undefined);
    }
  }

  private async begin(
    em: EntityManager,
    turnId: string,
    userId: string,
    conversation: Conversation,
    bot: Bot,
    modelId: string,
    teamId: string,
    options: TurnOptions,
    prepare: (tx: EntityManager) => Promise<Message[]>,
    started: () => void,
  ): Promise<TurnResult> {
    const convId = conversation.id;
    const toolIds = Array.isArray(bot.conf.toolIds) ? (bot.conf.toolIds as unknown[]).filter((id): id is string => typeof id === 'string') : [];
    const attrs: MessageAttrs = { stream: options.stream, tool_auto: options.toolAuto, isDebug: options.debug };
    const hold = await this.runner.reserve(em, { modelId, teamId, userId, conversation });
    let created: Message[];
    let assistant: Message;
    try {
      [created, assistant] = await inTransaction(em, async (tx) => [await prepare(tx), this.runner.assistantMessage(tx, convId, attrs)] as const);
    } catch (error) {
      await this.runner.release(em, hold.id, 'the conversation turn did not start');
      throw error;
    }
    const after = await this.log.lastSeq(em.fork(), convId);
    const members = this.conversations.memberIds(conversation);
    const turn: Turn = { id: turnId, conversation, bot, modelId, toolIds, members, userId, teamId, options, attrs, abort: new AbortController(), log: this.log.writer(convId, turnId, after, members) };
    if (options.signal) options.signal.addEventListener('abort', () => turn.abort.abort(options.signal!.reason), { once: true });
    const work = this.runner.run(turn, hold, assistant.id).then((outcome) => this.close(turn, outcome));
    this.running.set(turnId, { turn, work });
    started();
    const views = created.map(toMessageView);
    if (options.stream) return { convId, status: 'streaming', messages: [...views, toMessageView(assistant)], turnId, after };
    const outcome = await work;
    if (outcome.status === 'failed') throw outcome.error;
    return { convId, status: outcome.status, messages: [...views, ...outcome.messages], turnId, after };
  }

  /** Ends a turn: its last events and `turn-end` are stored as the conversation is released; then the hook. */
  private async close(turn: Turn, outcome: TurnOutcome): Promise<TurnOutcome> {
    const convId = turn.conversation.id;
    try {
      await turn.log.close([...outcome.tail, { type: 'turn-end', msgId: outcome.lastId, content: { status: outcome.status } }], (tx) => this.claims.releaseIn(tx, convId, turn.id));
    } catch (error) {
      this.logger.warn({ err: error, convId }, 'could not store the end of a conversation turn');
      await this.claims.release(convId, turn.id).catch(() => undefined);
    } finally {
      this.running.delete(turn.id);
    }
    if (outcome.status === 'failed' && turn.options.stream) {
      // The members got an `error` notification; unexpected errors were logged by the runner. Only the
      // code here: a provider error's cause is the vendor's response and is not worth a log line.
      this.logger.info({ convId, code: isTrellisError(outcome.error) ? outcome.error.code : 'internal' }, 'streamed conversation turn ended with an error');
    }
    try {
      const status = outcome.status === 'failed' ? 'failed' : outcome.status === 'stopped' ? 'stopped' : 'completed';
      await this.hooks.emit('conversation.turnFinished', { conversationId: convId, messageId: outcome.lastId, userId: turn.userId, teamId: turn.teamId, status, usage: outcome.usage });
    } catch (error) {
      this.logger.error({ err: error, hook: 'conversation.turnFinished', convId }, 'a conversation hook failed');
    }
    return outcome;
  }

  /**
   * Closes the turns of processes that went away: every `streaming` assistant message whose lease
   * was not renewed for `ai.turns.staleAfterMs` becomes `error` (`ai_turn_interrupted`) with the
   * text stored so far, and its members are told; a conversation held by such a turn is released.
   * Run at start-up and periodically; two processes sweeping at once close each message once.
   * Returns how many messages were closed.
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
      const conversation = message.conversation;
      // The lost turn's hold on the conversation goes with its message, in one transaction with its last events.
      const lostTurn = conversation.turnId && conversation.turnHeartbeatAt && conversation.turnHeartbeatAt < staleBefore ? { convId: conversation.id, turnId: conversation.turnId, heartbeatAt: conversation.turnHeartbeatAt } : null;
      const events = [
        { type: 'error' as const, turnId: conversation.turnId ?? '', msgId: message.id, content: body },
        ...(lostTurn ? [{ type: 'turn-end' as const, turnId: lostTurn.turnId, msgId: message.id, content: { status: 'failed' } }] : []),
      ];
      const done = await this.log.appendWithin(conversation.id, this.conversations.memberIds(conversation), events, async (tx) => {
        const claimed = await tx.nativeUpdate(Message, { id: message.id, status: 'streaming', heartbeatAt: message.heartbeatAt }, { status: 'error', error: body, heartbeatAt: null, updatedAt: new Date() });
        if (claimed && lostTurn) await this.claims.releaseStale(lostTurn, tx);
        return claimed === 1;
      });
      if (done) closed++;
    }
    if (closed) this.logger.warn({ messages: closed }, 'conversation turns cut by a stopped process were marked failed');
    // Turns lost between two model calls (no message being written).
    for (const stale of await this.claims.findStale(staleBefore)) {
      const conversation = await em.findOne(Conversation, { id: stale.convId });
      if (!conversation) continue;
      const end = { type: 'turn-end' as const, turnId: stale.turnId, msgId: '', content: { status: 'failed' } };
      await this.log.appendWithin(stale.convId, this.conversations.memberIds(conversation), [end], (tx) => this.claims.releaseStale(stale, tx));
    }
    return closed;
  }

  /** Pushes one `conversation` notification to every member (outside a turn: not in the log); a failed push never fails the caller. */
  async notify(target: { conversation: Conversation; members: string[] }, type: ConversationEventType, msgId: string, content: unknown): Promise<void> {
    for (const userId of target.members) {
      try {
        await this.push.toUser(userId, 'conversation', { convId: target.conversation.id, msgId, type, content });
      } catch (error) {
        this.logger.warn({ err: error, convId: target.conversation.id, type }, 'conversation push failed');
      }
    }
  }
}
