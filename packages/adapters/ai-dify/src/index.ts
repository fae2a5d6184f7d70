import { aiErrors, redactProviderError, refusalOf, TrellisError, type AiChatRequest, type AiMessage, type AiProvider, type AiStreamPart, type AiUsage } from '@trellis/core';
import { Type } from '@sinclair/typebox';
import { aiErrorFromStatus, confField, confSecrets, defaultRetryPolicy, final, isAbortError, readConf, streamWithRetries, type AiAdapterOptions, type ConfOf, type RetryPolicy } from '@trellis/ai-sdk';
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';

export const difyDefaultBaseUrl = 'https://api.dify.ai/v1';

/** What the `conf` of a `dify` model (one Dify app) may hold. */
export const difyConfSchema = Type.Object(
  {
    apiKey: confField.required("The app's API key (app-...). Encrypted at rest, answered masked.", 'the API key of the Dify app, app-...'),
    baseURL: confField.url(`The Dify service API base URL (default ${difyDefaultBaseUrl}; self-hosted: http://host/v1).`, { default: difyDefaultBaseUrl }),
    mode: confField.oneOf(['chat', 'workflow'] as const, '`chat`: `POST /chat-messages` (chat, agent and chatflow apps); `workflow`: `POST /workflows/run`. Default `chat`.', { default: 'chat' }),
    user: confField.string("Dify's end-user identifier for the calls (Dify scopes conversations by it). Default `trellis`.", { default: 'trellis' }),
    inputs: confField.object("Fixed values of the app's input variables."),
    queryInput: confField.string('Workflow mode: the input variable that receives the message text. Default `query`.', { default: 'query' }),
    systemInput: confField.string('The input variable that receives the system messages (unset: not sent).'),
    toolsInput: confField.string('The input variable that receives the offered tools as a JSON array of function definitions (unset: not sent).'),
    answerOutput: confField.string('Workflow mode: the output holding the answer when the workflow streamed no text. Default `text`.', { default: 'text' }),
    toolCallsOutput: confField.string('The workflow output (chatflow or workflow) whose list of `{id?, name, arguments}` become tool calls for Trellis to run. Default `tool_calls`.', {
      default: 'tool_calls',
    }),
    headers: confField.stringRecord('Extra HTTP headers sent with every call.'),
    maxRetries: confField.integer('Retries after a 429 or 5xx before the first part (default: the adapter option, 2).', { minimum: 0, maximum: 10 }),
  },
  { additionalProperties: false, title: 'dify model conf' },
);

/** The normalised `conf` of a `dify` model (one Dify app): `difyConfSchema` with its defaults applied. */
export interface DifyConf extends ConfOf<typeof difyConfSchema> {
  baseURL: string;
  mode: 'chat' | 'workflow';
  user: string;
  inputs: Record<string, unknown>;
  queryInput: string;
  answerOutput: string;
  toolCallsOutput: string;
}

export interface DifyProviderOptions extends AiAdapterOptions {
  /** How many Trellis threads (conversations, runs) keep their Dify conversation id in memory. Default 10,000. */
  maxThreads?: number;
}

const vendor = 'Dify';

/** The text Dify receives as `query`: the last user message, or the results of the tool calls that ended the transcript. */
export function difyQuery(messages: readonly AiMessage[]): string {
  const results: Array<Extract<AiMessage, { role: 'tool' }>> = [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message.role !== 'tool') break;
    results.unshift(message);
  }
  if (results.length) return `Tool results:\n${results.map((result) => `- ${result.toolName} (${result.toolCallId}): ${result.content}`).join('\n')}`;
  const user = [...messages].reverse().find((message) => message.role === 'user');
  if (!user) throw aiErrors.badRequest('A Dify app needs a user message to answer.');
  return user.content;
}

const parseArguments = (value: unknown): unknown => {
  if (typeof value !== 'string') return value ?? {};
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
};

/** Reads `outputs[key]` as tool calls (a list, or its JSON text). */
function toolCallsFrom(outputs: Record<string, unknown> | undefined, key: string, fallbackId: string): Array<Extract<AiStreamPart, { type: 'tool-call' }>> {
  let value = outputs?.[key];
  if (typeof value === 'string') value = parseArguments(value);
  if (!Array.isArray(value)) return [];
  return value
    .filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null && typeof (item as { name?: unknown }).name === 'string')
    .map((item, index) => ({
      type: 'tool-call' as const,
      toolCallId: typeof item.id === 'string' && item.id ? item.id : `${fallbackId}_${index}`,
      toolName: item.name as string,
      input: parseArguments(item.arguments ?? item.input ?? item.args),
    }));
}

const numberOr = (value: unknown, fallback = 0): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

/**
 * The `dify` AiProvider: a Dify app through its service API in streaming mode. `conf.mode`
 * `chat` calls `/chat-messages` (chat, agent and chatflow apps; Dify keeps the conversation, and
 * this adapter remembers the Dify conversation of each `threadId`); `workflow` calls
 * `/workflows/run`. Text comes from `message` / `agent_message` / `text_chunk` events, usage from
 * `message_end` (or the LLM nodes' usage of a workflow), failures from HTTP errors and `error`
 * events. See docs/ai-providers.md for what maps to Trellis tool calls and what cannot.
 */
export class DifyProvider implements AiProvider<DifyConf> {
  readonly service = 'dify';
  readonly confSchema = difyConfSchema;
  readonly secretConfKeys: readonly string[] = ['apiKey'];
  private readonly retryPolicy: RetryPolicy;
  private readonly threads = new Map<string, string>();
  private readonly maxThreads: number;

  constructor(private readonly options: DifyProviderOptions = {}) {
    this.retryPolicy = { ...defaultRetryPolicy, ...options.retry };
    this.maxThreads = options.maxThreads ?? 10_000;
  }

  parseConf(conf: Record<string, unknown>): DifyConf {
    const settings = readConf(difyConfSchema, conf, this.service);
    return {
      ...settings,
      baseURL: settings.baseURL ?? difyDefaultBaseUrl,
      mode: settings.mode ?? 'chat',
      user: settings.user ?? 'trellis',
      inputs: settings.inputs ?? {},
      queryInput: settings.queryInput ?? 'query',
      answerOutput: settings.answerOutput ?? 'text',
      toolCallsOutput: settings.toolCallsOutput ?? 'tool_calls',
    };
  }

  /** The Dify conversation id remembered for a Trellis thread (for tests and diagnostics). */
  conversationOf(threadId: string): string | undefined {
    return this.threads.get(threadId);
  }

  chat(conf: DifyConf, request: AiChatRequest): AsyncIterable<AiStreamPart> {
    const policy = conf.maxRetries === undefined ? this.retryPolicy : { ...this.retryPolicy, maxRetries: conf.maxRetries };
    return streamWithRetries(() => this.streamOnce(conf, request), { policy, signal: request.signal, mapError: (error) => this.mapError(error, conf) });
  }

  /** Dify's failures with the key and header values removed and the cause summarised (never a request or response body). */
  private mapError(error: unknown, conf: DifyConf): unknown {
    const secrets = confSecrets(conf as unknown as Record<string, unknown>, this.secretConfKeys);
    if (error instanceof TrellisError) return redactProviderError(error, secrets);
    const refused = refusalOf(error);
    if (refused) return refused;
    return redactProviderError(aiErrors.unavailable(`${vendor} could not be reached: ${describe(error)}`, error), secrets);
  }

  private remember(threadId: string, conversationId: string): void {
    this.threads.delete(threadId);
    this.threads.set(threadId, conversationId);
    while (this.threads.size > this.maxThreads) this.threads.delete(this.threads.keys().next().value as string);
  }

  private async *streamOnce(conf: DifyConf, request: AiChatRequest): AsyncGenerator<AiStreamPart> {
    // The adapter's own fetch, else the caller's (the server's network guard), else the global one.
    const fetchFn = this.options.fetch ?? request.fetch ?? globalThis.fetch;
    const query = difyQuery(request.messages);
    const inputs: Record<string, unknown> = { ...conf.inputs };
    const system = request.messages.filter((message) => message.role === 'system').map((message) => message.content);
    if (conf.systemInput && system.length) inputs[conf.systemInput] = system.join('\n\n');
    if (conf.toolsInput && request.tools?.length) {
      inputs[conf.toolsInput] = JSON.stringify(request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } })));
    }
    const chatMode = conf.mode === 'chat';
    const knownConversation = chatMode && request.threadId ? this.threads.get(request.threadId) : undefined;
    const body = chatMode
      ? { inputs, query, response_mode: 'streaming', user: conf.user, conversation_id: knownConversation ?? '', auto_generate_name: false }
      : { inputs: { ...inputs, [conf.queryInput]: query }, response_mode: 'streaming', user: conf.user };
    const response = await fetchFn(`${conf.baseURL}/${chatMode ? 'chat-messages' : 'workflows/run'}`, {
      method: 'POST',
      headers: { ...conf.headers, authorization: `Bearer ${conf.apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
      signal: request.signal,
    }).catch((error: unknown) => {
      if (request.signal?.aborted || isAbortError(error)) throw error;
      // The network guard refused the address: said as such (destination_refused), never retried.
      throw refusalOf(error) ?? aiErrors.unavailable(`${vendor} could not be reached: ${describe(error)}`, error);
    });
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      let detail = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text) as { code?: string; message?: string };
        if (parsed.message) detail = parsed.code ? `${parsed.message} (${parsed.code})` : parsed.message;
      } catch {
        // not JSON: keep the text
      }
      if (response.status === 404 && knownConversation && request.threadId) {
        // Dify no longer knows the conversation (deleted, or another user): start a new one on retry.
        this.threads.delete(request.threadId);
        throw aiErrors.unavailable(`${vendor} no longer knows this conversation; a new one is started.`);
      }
      throw aiErrorFromStatus(response.status, { vendor, message: detail.split(conf.apiKey).join('***'), headers: response.headers });
    }
    if (!response.body) throw aiErrors.unavailable(`${vendor} answered without a body.`);

    let taskId: string | undefined;
    const onAbort = () => {
      if (!taskId) return;
      const stopPath = chatMode ? `chat-messages/${taskId}/stop` : `workflows/tasks/${taskId}/stop`;
      // Best effort: tell Dify to stop generating (the caller already stopped reading).
      void fetchFn(`${conf.baseURL}/${stopPath}`, {
        method: 'POST',
        headers: { ...conf.headers, authorization: `Bearer ${conf.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user: conf.user }),
      }).catch(() => undefined);
    };
    request.signal?.addEventListener('abort', onAbort, { once: true });

    const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
    let streamedText = false;
    let ended = false;
    let usage: AiUsage | undefined;
    const nodeUsage: AiUsage = { inputTokens: 0, outputTokens: 0 };
    let workflowTokens = 0;
    let toolCalls = 0;
    try {
      for (;;) {
        const { value, done } = await reader.read().catch((error: unknown) => {
          if (request.signal?.aborted || isAbortError(error)) throw error;
          // Dify was reached and answered; its stream broke off (a cut connection, a proxy timeout).
          throw final(aiErrors.unavailable(`The stream from ${vendor} was cut after it started: ${describe(error)}`, error));
        });
        if (done) break;
        const event = value as EventSourceMessage;
        if (event.event === 'ping' || !event.data) continue;
        let data: Record<string, any>;
        try {
          data = JSON.parse(event.data) as Record<string, any>;
        } catch {
          continue;
        }
        if (typeof data.task_id === 'string') taskId = data.task_id;
        if (chatMode && request.threadId && typeof data.conversation_id === 'string' && data.conversation_id) this.remember(request.threadId, data.conversation_id);
        switch (data.event) {
          case 'message':
          case 'agent_message':
            if (typeof data.answer === 'string' && data.answer) {
              streamedText = true;
              yield { type: 'text-delta', delta: data.answer };
            }
            break;
          case 'text_chunk':
            if (typeof data.data?.text === 'string' && data.data.text) {
              streamedText = true;
              yield { type: 'text-delta', delta: data.data.text };
            }
            break;
          case 'node_finished': {
            const nodeUsageBody = data.data?.outputs?.usage;
            if (nodeUsageBody && typeof nodeUsageBody === 'object') {
              nodeUsage.inputTokens += numberOr(nodeUsageBody.prompt_tokens);
              nodeUsage.outputTokens += numberOr(nodeUsageBody.completion_tokens);
            }
            break;
          }
          case 'workflow_finished': {
            const run = data.data ?? {};
            if (run.status && run.status !== 'succeeded') {
              throw final(aiErrors.unavailable(`The ${vendor} workflow ${run.status}${run.error ? `: ${String(run.error)}` : '.'}`));
            }
            workflowTokens = numberOr(run.total_tokens);
            const outputs = (run.outputs ?? {}) as Record<string, unknown>;
            if (!chatMode && !streamedText && typeof outputs[conf.answerOutput] === 'string' && outputs[conf.answerOutput]) {
              streamedText = true;
              yield { type: 'text-delta', delta: outputs[conf.answerOutput] as string };
            }
            for (const call of toolCallsFrom(outputs, conf.toolCallsOutput, `dify_${taskId ?? 'call'}`)) {
              toolCalls += 1;
              yield call;
            }
            if (!chatMode) ended = true;
            break;
          }
          case 'message_end': {
            const reported = data.metadata?.usage;
            if (reported && typeof reported === 'object' && 'prompt_tokens' in reported) {
              usage = { inputTokens: numberOr(reported.prompt_tokens), outputTokens: numberOr(reported.completion_tokens) };
            }
            ended = true;
            break;
          }
          case 'error':
            throw aiErrorFromStatus(numberOr(data.status, 500), { vendor, message: [data.message, data.code && `(${data.code})`].filter(Boolean).join(' ') });
          default:
            // workflow_started, node_started, agent_thought (tools Dify ran itself), message_file,
            // message_replace, tts_message*: nothing for the caller to act on.
            break;
        }
        if (ended && chatMode) break;
      }
    } finally {
      request.signal?.removeEventListener('abort', onAbort);
      // Closes the connection when the caller stopped early or Dify left the stream open.
      await reader.cancel().catch(() => undefined);
    }
    if (!ended) throw aiErrors.unavailable(`The stream from ${vendor} ended before it finished.`);
    const finalUsage = usage ?? (nodeUsage.inputTokens || nodeUsage.outputTokens ? nodeUsage : { inputTokens: workflowTokens, outputTokens: 0 });
    yield { type: 'finish', finishReason: toolCalls ? 'tool-calls' : 'stop', usage: finalUsage };
  }
}

/** An error's message with its cause's (`terminated (other side closed)`). */
function describe(error: unknown): string {
  return error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);
}
