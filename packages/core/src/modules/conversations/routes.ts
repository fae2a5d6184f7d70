import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { PageQuery, pageOf, paging } from '../../kernel/http/dto/paging.js';
import { ModelCallReader, modelCallPageSchema, toModelCallView } from '../ai/index.js';
import {
  ConversationCreateBody,
  ConversationEventsQuery,
  ConversationListQuery,
  ConversationParams,
  ConversationUpdateBody,
  MessageListQuery,
  MessageParams,
  MessageRunBody,
  MessageSendBody,
  ToolAnswerBody,
  ToolExecuteBody,
  ToolExecuteParams,
  TurnParams,
} from './dto/conversation.dto.js';
import { ConversationService } from './services/conversation.service.js';
import { ConversationTurnService, type TurnOptions, type TurnResult } from './services/conversation-turn.service.js';
import { ToolExecutionService } from './services/tool-execution.service.js';
import type { ConversationEventRecord } from './entities/conversation-event.entity.js';
import { pageSchema } from '../../kernel/http/response-schema.js';
import { conversationEventStreamSchema, conversationSchema, messageSchema, toConversationView, toMessageView, toolExecutionSchema, turnSchema, turnStopSchema } from './views.js';

const auth = ['jwt', 'api_key', 'agent_token', 'oauth'] as const;
const tags = ['Conversations'];
const badRequest = { status: 400, code: 'validation_failed' };
const notFound = 'No conversation you are a member of has this id (conversation_not_found)';
const turnErrors = {
  400: 'Body invalid (validation_failed); the conversation has no bot (conversation_has_no_bot), the bot no model (bot_has_no_model, bot_model_missing); no adapter for the model\'s service (ai_provider_not_configured); no team to pay (no_team_associated); the provider refused the request (ai_bad_request)',
  402: 'The team cannot cover the credit reservation of one model call (insufficient_credits), checked before the provider is called',
  404: `${notFound}; or no such message in it (message_not_found)`,
  409: 'The bot is already answering (turn_in_progress: one turn at a time per conversation, across host processes), or tool answers are pending (tool_answers_pending)',
  429: 'The AI provider is rate limiting (ai_rate_limited, with Retry-After)',
  502: 'The AI provider refused the credentials (ai_auth_failed)',
  503: 'The AI provider is unavailable (ai_unavailable)',
};
const turnDescription =
  'With `stream` the answer is 202 at once (status `streaming`, the stored messages and the assistant message being written, the `turnId`, and `after`, the conversation\'s last event before the turn) and the output is pushed to every member over the user WebSocket (`/v3/wss`, method `conversation`: message-start, delta, tool-call, tool-result, end, error) and can be followed as SSE (`GET /conversation/{convId}/events?after=`). Without it the call waits and answers 200 with the finished messages. `tool_auto` runs tool calls and feeds the results back until the model answers; otherwise an answer with tool calls ends `waiting_tool` until `POST .../messages/{msgId}/tool` answers each call. Every model call reserves credits first and settles them from the usage.';

const eventFrames = {
  status: 200,
  description: "The conversation's events after `after` (or `Last-Event-ID`), then the live tail, each once and in order, to the end of a turn (`turn-end`).",
  contentType: 'text/event-stream',
  schema: conversationEventStreamSchema,
  alternatives: [{ status: 204, description: 'No event after `after` and no turn running: an EventSource stops reconnecting.' }],
};

const answer = (result: TurnResult) => Reply.json(result, result.status === 'streaming' ? 202 : 200);
const turnResponse = {
  status: 200,
  schema: turnSchema,
  description: 'The finished turn (without `stream`).',
  alternatives: [{ status: 202, schema: turnSchema, description: 'With `stream`: accepted, status `streaming`; the output follows over the user WebSocket.' }],
};

export const conversationRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/conversation',
    summary: 'Create a conversation',
    description: 'Members default to the creator, who is always one. `botId` names one of your bots.',
    tags,
    auth,
    body: ConversationCreateBody,
    validationError: badRequest,
    response: { status: 201, schema: conversationSchema },
    errors: { 400: 'Body invalid (validation_failed); botId names no bot of yours (invalid_bot); members names unknown users (unknown_members)' },
    async handler(ctx) {
      return Reply.json(toConversationView(await ctx.get(ConversationService).create(ctx.em, ctx.requirePrincipal().userId, ctx.body)), 201);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation',
    summary: 'List the conversations you are a member of',
    description: 'Newest first; `hdId` keeps the conversations of one hardware device.',
    tags,
    auth,
    query: ConversationListQuery,
    validationError: badRequest,
    response: { schema: pageSchema(conversationSchema) },
    errors: { 400: 'Query invalid (validation_failed)' },
    async handler(ctx) {
      const p = paging(ctx.query);
      const { items, total } = await ctx.get(ConversationService).list(ctx.em, ctx.requirePrincipal().userId, p, ctx.query.hdId);
      return pageOf(items.map(toConversationView), total, p);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/:convId',
    summary: 'One conversation',
    tags,
    auth,
    params: ConversationParams,
    response: { schema: conversationSchema },
    errors: { 404: notFound },
    async handler(ctx) {
      return toConversationView(await ctx.get(ConversationService).requireMember(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId));
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/conversation/:convId',
    summary: 'Update a conversation',
    description: 'Any member may. Fields left out stay; `conf` replaces the stored conf as a whole, so send it complete.',
    tags,
    auth,
    params: ConversationParams,
    body: ConversationUpdateBody,
    validationError: badRequest,
    response: { schema: conversationSchema },
    errors: { 400: 'Body invalid (validation_failed)', 404: notFound },
    async handler(ctx) {
      return toConversationView(await ctx.get(ConversationService).update(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, ctx.body));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/conversation/:convId',
    summary: 'Delete a conversation',
    description: 'Irreversible: deletes every message of the conversation. Only its owner may.',
    tags,
    auth,
    params: ConversationParams,
    response: { status: 204 },
    errors: { 403: 'You are a member but not the owner (conversation_owner_required)', 404: notFound },
    async handler(ctx) {
      await ctx.get(ConversationService).remove(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/:convId/messages',
    summary: 'Messages of a conversation',
    description: 'Oldest first.',
    tags,
    auth,
    params: ConversationParams,
    query: MessageListQuery,
    validationError: badRequest,
    response: { schema: pageSchema(messageSchema) },
    errors: { 400: 'Query invalid (validation_failed)', 404: notFound },
    async handler(ctx) {
      const service = ctx.get(ConversationService);
      const conversation = await service.requireMember(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId);
      const p = paging(ctx.query);
      const { items, total } = await service.messages(ctx.em, conversation.id, p);
      return pageOf(items.map(toMessageView), total, p);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/:convId/messages',
    summary: 'Send a message; the bot answers',
    description: turnDescription,
    tags,
    auth,
    params: ConversationParams,
    body: MessageSendBody,
    validationError: badRequest,
    response: turnResponse,
    errors: turnErrors,
    async handler(ctx) {
      const attrs = ctx.body.attrs ?? {};
      const options: TurnOptions = { stream: attrs.stream === true, toolAuto: attrs.tool_auto === true, debug: attrs.isDebug === true, signal: attrs.stream ? undefined : ctx.signal };
      return answer(await ctx.get(ConversationTurnService).send(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, ctx.body.content, options));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/:convId/messages/run',
    summary: 'Run the bot on the conversation',
    description: `With \`content\`, stores it as a user message first; without, the bot answers the conversation as it stands. ${turnDescription}`,
    tags,
    auth,
    params: ConversationParams,
    body: MessageRunBody,
    validationError: badRequest,
    response: turnResponse,
    errors: { ...turnErrors, 400: `${turnErrors[400]}; nothing to answer (nothing_to_answer)` },
    async handler(ctx) {
      const b = ctx.body;
      const options: TurnOptions = { stream: b.stream === true, toolAuto: b.tool_auto === true, debug: b.isDebug === true, signal: b.stream ? undefined : ctx.signal };
      return answer(await ctx.get(ConversationTurnService).run(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, b.content, options));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/:convId/messages/:msgId/run',
    summary: 'Answer again from a message (rerun)',
    description: `An assistant message is replaced: it and every later message are deleted and the bot answers again. A user message is kept (\`content\` replaces its text) and every later message deleted. ${turnDescription}`,
    tags,
    auth,
    params: MessageParams,
    body: MessageRunBody,
    validationError: badRequest,
    response: turnResponse,
    errors: { ...turnErrors, 400: `${turnErrors[400]}; a tool message cannot be rerun (cannot_rerun_tool_message); content on an assistant message (cannot_edit_assistant_message)` },
    async handler(ctx) {
      const b = ctx.body;
      const options: TurnOptions = { stream: b.stream === true, toolAuto: b.tool_auto === true, debug: b.isDebug === true, signal: b.stream ? undefined : ctx.signal };
      return answer(await ctx.get(ConversationTurnService).rerun(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, ctx.params.msgId, b.content, options));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/:convId/messages/:msgId/tool',
    summary: 'Answer a tool call',
    description:
      'Stores the result of one tool call of the assistant message `msgId` (status `waiting_tool`). Once every call of the message has an answer the bot continues with the same stream, tool_auto and isDebug settings as the turn that asked; until then the answer is status `waiting_tool`.',
    tags,
    auth,
    params: MessageParams,
    body: ToolAnswerBody,
    validationError: badRequest,
    response: turnResponse,
    errors: {
      ...turnErrors,
      404: `${turnErrors[404]}; the message has no such tool call (tool_call_not_found)`,
      409: 'The call already has an answer (tool_call_answered); the bot is already answering (turn_in_progress)',
    },
    async handler(ctx) {
      return answer(
        await ctx.get(ConversationTurnService).answerTool(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, ctx.params.msgId, ctx.body.tool_call_id, ctx.body.content),
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/:convId/events',
    summary: "Follow the conversation's turns as server-sent events (reconnect with Last-Event-ID or ?after=)",
    description:
      "Every turn is recorded in the conversation's event log, numbered at the source: `message-start`, `delta`, `tool-call`, `tool-result`, `end`, `error` (the WebSocket notification's types and content), and `turn-end` (`{status}`: completed, waiting_tool, step_limit, failed, stopped) last. Answers the events above `Last-Event-ID` (or `after`, default 0: the whole log), each exactly once, then the live tail from whichever process runs the turn, and ends after the next `turn-end`. 204 when there is nothing to send and no turn running.",
    tags,
    auth,
    params: ConversationParams,
    query: ConversationEventsQuery,
    validationError: badRequest,
    response: eventFrames,
    errors: { 400: 'Query invalid (validation_failed)', 404: notFound },
    async handler(ctx) {
      const header = ctx.headers['last-event-id']?.trim();
      // A malformed Last-Event-ID counts as none (the whole log), as on a run's events.
      const after = header !== undefined ? (/^\d{1,15}$/.test(header) ? Number(header) : 0) : (ctx.query.after ?? 0);
      const batches = await ctx.get(ConversationTurnService).events(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId, after, ctx.signal);
      if (!batches) return Reply.empty(204);
      const convId = ctx.params.convId;
      return Reply.stream(sseOf(convId, batches), 'text/event-stream; charset=utf-8', { 'x-accel-buffering': 'no' });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/conversation/:convId/turns/:turnId/model-calls',
    summary: 'List the model calls of a conversation turn, oldest first',
    description:
      'The AI provider calls the turn made (one per model call: a `tool_auto` turn makes one per tool round), with the model, the messages and tool definitions sent (unless `ai.records.messageBodies` is off), the tool calls returned, the tokens the provider reported, the credits, the latencies and the status. The turn id is the `turnId` of `POST /conversation/{convId}/turn/stop` and of the conversation\'s `turn-end` events. Records are kept for `ai.records.retentionDays` days. See docs/observability.md.',
    tags,
    auth,
    params: TurnParams,
    query: PageQuery,
    validationError: badRequest,
    response: { schema: modelCallPageSchema },
    errors: { 400: 'Query invalid (validation_failed)', 404: notFound },
    async handler(ctx) {
      await ctx.get(ConversationService).requireMember(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId);
      const page = await ctx.get(ModelCallReader).forTurn(ctx.em, ctx.params.convId, ctx.params.turnId, paging(ctx.query));
      return { ...page, items: page.items.map(toModelCallView) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/conversation/:convId/turn/stop',
    summary: "Stop the bot's running turn",
    description:
      'Aborts the provider stream of the running turn, in whichever host process runs it. The text written so far stays in the assistant message (status `stopped`), its members get an `end` with status `stopped`, the model call is charged for the input sent and the output written (estimated) and the rest of its credit reservation is released. Answers once the turn ended (`stopped`), or after 10 s with `stopping`.',
    tags,
    auth,
    params: ConversationParams,
    response: { schema: turnStopSchema },
    errors: { 404: notFound, 409: 'The bot is not answering in this conversation (no_turn_in_progress)' },
    async handler(ctx) {
      return ctx.get(ConversationTurnService).stop(ctx.em, ctx.requirePrincipal().userId, ctx.params.convId);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/ai/tools/:toolId/execute',
    summary: 'Execute an action of an AI tool',
    description:
      '`hook` names the action; `data` are its arguments (`{content}` when absent). You must be a member of `convId`, and `msgId` a message of it. With `send` the result is also stored in the conversation as a tool message and pushed to the members as `tool-result`.',
    tags: ['AI tools'],
    auth,
    params: ToolExecuteParams,
    body: ToolExecuteBody,
    validationError: badRequest,
    response: { schema: toolExecutionSchema },
    errors: {
      400: 'Body invalid (validation_failed); the destination is a private address (tool_destination_refused)',
      404: 'No tool of yours (tool_not_found), no such action (tool_action_not_found), conversation (conversation_not_found) or message (message_not_found)',
      502: 'The tool endpoint failed, answered a non-2xx status or timed out (tool_call_failed)',
    },
    async handler(ctx) {
      return ctx.get(ToolExecutionService).execute(ctx.em, ctx.requirePrincipal().userId, ctx.params.toolId, ctx.body, ctx.signal);
    },
  }),
];

/** SSE frames of conversation events, one write per batch. */
async function* sseOf(convId: string, batches: AsyncIterable<ConversationEventRecord[]>): AsyncGenerator<string> {
  for await (const batch of batches) {
    let frames = '';
    for (const e of batch) frames += `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify({ seq: e.seq, type: e.type, turnId: e.turnId, msgId: e.msgId, convId, content: e.content })}\n\n`;
    if (frames) yield frames;
  }
}
