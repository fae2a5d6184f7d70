import { randomUUID } from 'node:crypto';
import { toTrellisError, TrellisError } from '../../kernel/errors.js';
import { openAiErrorBody } from '../../kernel/http/openai-error-body.js';
import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../kernel/http/route.js';
import { prepareBlockCompletion } from './block-completion.js';
import { prepareBotCompletion } from './bot-completion.js';
import { callerOf, missingKey } from './caller.js';
import { collectCompletion, streamCompletion, type PreparedCompletion } from './completion.js';
import { ChatCompletionBody } from './dto.js';
import { lastUserText, toAiMessages, toAiTools } from './messages.js';
import { listModels } from './models.js';
import { chatCompletionSchema, chatCompletionStreamSchema, modelListSchema } from './schemas.js';

const tags = ['OpenAI-compatible'];
const common = { tags, auth: 'none', errorFormat: 'openai', cors: 'default', validationError: { status: 400, code: 'validation_failed' }, unknownFields: 'ignore' } as const;
const authErrors = {
  401: 'No credential (missing_credentials), or one this server does not know (invalid_token)',
  403: 'A credential kind that cannot call this API (credential_not_allowed), a scope it lacks (insufficient_scope)',
};

const modelNotFound = (model: string) => new TrellisError('not_found', 'model_not_found', `The model "${model}" does not exist: name a bot as bot:<id> or a deployed block as block:<id> (GET /v1/models).`);

/** The error body of a failure after the stream began (sent as a `data:` event). */
function streamedError(error: unknown): Record<string, unknown> {
  const trellis = toTrellisError(error);
  return openAiErrorBody(trellis, trellis.exposed ? trellis.message : 'The answer could not be completed.');
}

/**
 * The OpenAI-compatible API (docs/openai-compatible.md): `GET /v1/models` and
 * `POST /v1/chat/completions`, where the model is a bot (`bot:<id>`) or a deployed block
 * (`block:<id>`). Keys are sent as `Authorization: Bearer`: an API key or user token, or a
 * deployment token (`trd_`) for its deployment. Errors have OpenAI's shape.
 */
export function openAiCompatRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: '/v1/models',
      summary: 'List the bots and deployed blocks the caller may use as models',
      description: 'Bots of the caller (`bot:<id>`) and deployed blocks it may call (`block:<id>`); with a deployment token, that deployment.',
      operationId: 'openaiListModels',
      response: { schema: modelListSchema },
      errors: authErrors,
      async handler(ctx) {
        const caller = await callerOf(ctx);
        if (!caller.principal && !caller.deploymentToken) throw missingKey();
        return { object: 'list' as const, data: await listModels(ctx.em, ctx.get, caller) };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/v1/chat/completions',
      summary: 'Answer a chat with a bot or a deployed block (OpenAI chat completions)',
      description:
        'A bot answers the messages after its prompt, with the client\'s tools passed through (tool calls come back as `tool_calls`); a deployed block runs with inputs from the last user message. `stream: true` answers `chat.completion.chunk` events and `data: [DONE]`. Credits are held and settled as for a conversation turn or a run. See docs/openai-compatible.md.',
      operationId: 'openaiCreateChatCompletion',
      body: ChatCompletionBody,
      response: {
        schema: chatCompletionSchema,
        mediaTypes: [{ contentType: 'text/event-stream', schema: chatCompletionStreamSchema }],
      },
      errors: {
        ...authErrors,
        400: 'Malformed messages (invalid_messages) or tools (invalid_tools), bad body (validation_failed), inputs the deployment refuses (invalid_inputs), a bot without a model (bot_has_no_model, bot_model_missing), no team to bill (no_team_associated)',
        402: 'Too few credits (insufficient_credits)',
        404: 'No such model (model_not_found), bot (bot_not_found), block (block_not_found) or deployment (deployment_not_found)',
        429: 'The AI provider is rate limiting (ai_rate_limited)',
      },
      async handler(ctx) {
        const body = ctx.body;
        const caller = await callerOf(ctx);
        const messages = toAiMessages(body.messages);
        let prepared: PreparedCompletion;
        if (body.model.startsWith('bot:')) {
          if (!caller.principal) throw caller.deploymentToken ? new TrellisError('forbidden', 'credential_not_allowed', 'A deployment token calls its deployment only; a bot needs an API key or user token.') : missingKey();
          prepared = await prepareBotCompletion(ctx.em, ctx.get, ctx.log, {
            userId: caller.principal.userId,
            botId: body.model.slice('bot:'.length),
            messages,
            tools: toAiTools(body.tools),
            temperature: body.temperature,
            maxOutputTokens: body.max_completion_tokens ?? body.max_tokens,
            signal: ctx.signal,
          });
        } else if (body.model.startsWith('block:')) {
          prepared = await prepareBlockCompletion(ctx.em, ctx.get, caller, body.model, lastUserText(messages), ctx.signal);
        } else {
          throw modelNotFound(body.model);
        }
        const request = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: body.model };
        if (!body.stream) return collectCompletion(request, prepared);
        return Reply.stream(streamCompletion(request, prepared, body.stream_options?.include_usage === true, streamedError), 'text/event-stream; charset=utf-8', { 'x-accel-buffering': 'no' });
      },
    }),
  ];
}
