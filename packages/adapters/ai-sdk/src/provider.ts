import { APICallError } from '@ai-sdk/provider';
import type { TObject } from '@sinclair/typebox';
import {
  aiErrors,
  refusalOf,
  messageOf,
  redactProviderError,
  redactSecrets,
  summariseFailure,
  TrellisError,
  type AiChatRequest,
  type AiEmbedRequest,
  type AiEmbedResult,
  type AiFinishReason,
  type AiMessage,
  type AiProvider,
  type AiStreamPart,
  type AiToolCall,
} from '@trellis/core';
import { embedMany, jsonSchema, Output, RetryError, streamText, tool, type EmbeddingModel, type LanguageModel, type ModelMessage, type ToolSet } from 'ai';
import { abortReason, aiErrorFromStatus, callWithRetries, defaultRetryPolicy, streamWithRetries, type AiAdapterOptions, type RetryPolicy } from './retry.js';

/** The settings every AI SDK based adapter reads from `conf` (besides its own). */
export interface AiSdkConf {
  model: string;
  apiKey?: string;
  baseURL?: string;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  headers?: Record<string, string>;
  maxRetries?: number;
}

const finishReasons: Record<string, AiFinishReason> = { stop: 'stop', length: 'length', 'tool-calls': 'tool-calls', 'content-filter': 'content-filter', error: 'error' };

/** Trellis messages as AI SDK model messages (system messages go to `system`). */
export function toModelMessages(messages: readonly AiMessage[]): { system: string | undefined; messages: ModelMessage[] } {
  const system: string[] = [];
  const out: ModelMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        system.push(message.content);
        break;
      case 'user':
        out.push({ role: 'user', content: message.content });
        break;
      case 'assistant':
        if (message.toolCalls?.length) {
          out.push({
            role: 'assistant',
            content: [
              ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
              ...message.toolCalls.map((call: AiToolCall) => ({ type: 'tool-call' as const, toolCallId: call.toolCallId, toolName: call.toolName, input: call.input })),
            ],
          });
        } else out.push({ role: 'assistant', content: message.content });
        break;
      case 'tool': {
        const part = { type: 'tool-result' as const, toolCallId: message.toolCallId, toolName: message.toolName, output: { type: 'text' as const, value: message.content } };
        const previous = out.at(-1);
        // Results of one assistant turn travel together (Gemini and Anthropic expect one turn).
        if (previous?.role === 'tool') previous.content.push(part);
        else out.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: out };
}

/** `vendor` at the start of a sentence (`the OpenAI-compatible server` becomes `The OpenAI-compatible server`). */
export const sentenceStart = (vendor: string): string => vendor.charAt(0).toUpperCase() + vendor.slice(1);

/** The secrets of a conf that a vendor may echo: the secret keys' values and every header value (with a `Bearer` token alone too). */
export function confSecrets(conf: Record<string, unknown>, secretKeys: readonly string[]): string[] {
  const out: string[] = [];
  const add = (value: unknown) => {
    if (typeof value !== 'string' || value === '') return;
    out.push(value);
    const token = /^\s*(?:bearer|basic|token)\s+(\S+)\s*$/i.exec(value)?.[1];
    if (token) out.push(token);
  };
  for (const key of secretKeys) add(conf[key]);
  const headers = conf.headers;
  if (headers && typeof headers === 'object') for (const value of Object.values(headers)) add(value);
  return out;
}

/**
 * An error event inside a stream that began well (OpenAI `data: {"error": ...}`, Anthropic
 * `event: error`): the AI SDK passes the vendor's error object as is. Rate limits and refused
 * credentials keep their codes; anything else is the vendor failing mid-answer.
 */
function mapStreamErrorObject(error: Record<string, unknown>, vendor: string, redact: (text: string) => string): TrellisError {
  const inner = (error.error && typeof error.error === 'object' ? error.error : error) as Record<string, unknown>;
  const words = [inner.type, inner.code, inner.status].filter((v) => v !== undefined && v !== null).map(String).join(' ');
  const message = redact(messageOf(error));
  const cause = summariseFailure(error, []);
  if (/rate_limit|too_many_requests|RESOURCE_EXHAUSTED|\b429\b/i.test(words)) return aiErrors.rateLimited(null, `${sentenceStart(vendor)} is rate limiting requests: ${message}`, cause);
  if (/authentication|permission|invalid_api_key|\b40[13]\b/i.test(words)) return aiErrors.authFailed(`${sentenceStart(vendor)} refused the credentials configured for this model.`, cause);
  return aiErrors.unavailable(`${sentenceStart(vendor)} failed in the middle of its answer: ${message}`, cause);
}

/**
 * Maps whatever the AI SDK threw into the `aiErrors` vocabulary. `secrets` are removed from any
 * vendor text that reaches the message (some vendors echo a refused key), and the cause kept is a
 * summary (`ProviderFailure`): never the request body (the conversation) or the response body.
 * `vendor` is a noun phrase (`Anthropic`, `the OpenAI-compatible server`).
 */
export function mapAiSdkError(
  error: unknown,
  vendor: string,
  secrets: readonly (string | undefined)[] = [],
  vendorMap?: (error: APICallError) => TrellisError | undefined,
): unknown {
  const known = secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length > 0);
  const redact = (text: string | undefined) => redactSecrets(text ?? '', known);
  const scrub = (mapped: TrellisError) => redactProviderError(mapped, known);
  if (error instanceof TrellisError) return scrub(error);
  // The network guard refused the model's address: said as such, never retried.
  const refused = refusalOf(error);
  if (refused) return refused;
  if (RetryError.isInstance(error)) return mapAiSdkError(error.lastError, vendor, secrets, vendorMap);
  if (vendorMap && APICallError.isInstance(error)) {
    const mapped = vendorMap(error);
    if (mapped) return scrub(mapped);
  }
  const Vendor = sentenceStart(vendor);
  if (APICallError.isInstance(error)) {
    if (error.statusCode !== undefined && error.statusCode < 400) {
      // The answer started fine and its body failed (a connection cut mid-stream, a malformed chunk).
      const reason = error.cause instanceof Error ? error.cause.message : error.message;
      return scrub(aiErrors.unavailable(`The stream from ${vendor} was cut after it started: ${redact(reason)}`, error));
    }
    if (error.statusCode !== undefined) {
      return scrub(aiErrorFromStatus(error.statusCode, { vendor: Vendor, message: redact(error.message), headers: error.responseHeaders, cause: error }));
    }
    return scrub(aiErrors.unavailable(`${Vendor} could not be reached: ${redact(error.message)}`, error));
  }
  const name = error instanceof Error ? error.name : '';
  if (['AI_InvalidPromptError', 'AI_InvalidArgumentError', 'AI_UnsupportedFunctionalityError', 'AI_InvalidMessageRoleError'].includes(name)) {
    return scrub(aiErrors.badRequest(`${Vendor} cannot take this request: ${redact((error as Error).message)}`, error));
  }
  if (!(error instanceof Error) && error !== null && typeof error === 'object') return scrub(mapStreamErrorObject(error as Record<string, unknown>, vendor, redact));
  return scrub(aiErrors.unavailable(`The stream from ${vendor} failed: ${redact(messageOf(error))}`, error));
}

/**
 * An `AiProvider` on top of any Vercel AI SDK 6 language model: the subclass parses its `conf` and
 * builds the model; this class streams through `streamText` (one step, tools without `execute`,
 * so tool calls come back to the caller), maps errors and retries before the first part.
 */
export abstract class AiSdkProvider<Conf extends AiSdkConf> implements AiProvider<Conf> {
  abstract readonly service: string;
  /** The vendor's name in error messages, a noun phrase that reads mid-sentence (`Anthropic`). */
  protected abstract readonly vendor: string;
  readonly secretConfKeys: readonly string[] = ['apiKey'];
  /** The JSON Schema of `conf` (a `Type.Object` of `confField`s) that `parseConf` checks with `readConf`. */
  abstract readonly confSchema: TObject;
  protected readonly retryPolicy: RetryPolicy;

  constructor(protected readonly options: AiAdapterOptions = {}) {
    this.retryPolicy = { ...defaultRetryPolicy, ...options.retry };
  }

  abstract parseConf(conf: Record<string, unknown>): Conf;

  /** The AI SDK model for `conf`, making its HTTP calls with `fetch`. */
  protected abstract languageModel(conf: Conf, fetch?: typeof globalThis.fetch): LanguageModel;

  /** The fetch of a request: the adapter's own `fetch` option, else the caller's (the server's network guard). */
  protected fetchFor(request: { fetch?: typeof globalThis.fetch }): typeof globalThis.fetch | undefined {
    return this.options.fetch ?? request.fetch;
  }

  /** Vendor-specific `providerOptions` of a call. */
  protected providerOptions(_conf: Conf): Record<string, Record<string, any>> | undefined {
    return undefined;
  }

  protected policyFor(conf: Conf): RetryPolicy {
    return conf.maxRetries === undefined ? this.retryPolicy : { ...this.retryPolicy, maxRetries: conf.maxRetries };
  }

  /** A vendor's own reading of an HTTP failure, before the status-based mapping (`undefined`: use that). */
  protected mapVendorError(_error: APICallError): TrellisError | undefined {
    return undefined;
  }

  /** The vendor's name for one model (a subclass may tell servers apart by `conf`). */
  protected vendorFor(_conf: Conf): string {
    return this.vendor;
  }

  protected mapError(conf: Conf): (error: unknown) => unknown {
    return (error) => mapAiSdkError(error, this.vendorFor(conf), confSecrets(conf as Record<string, unknown>, this.secretConfKeys), (apiError) => this.mapVendorError(apiError));
  }

  chat(conf: Conf, request: AiChatRequest): AsyncIterable<AiStreamPart> {
    const model = this.languageModel(conf, this.fetchFor(request));
    return streamWithRetries(() => this.streamOnce(model, conf, request), { policy: this.policyFor(conf), signal: request.signal, mapError: this.mapError(conf) });
  }

  private async *streamOnce(model: LanguageModel, conf: Conf, request: AiChatRequest): AsyncGenerator<AiStreamPart> {
    // Our own controller, so that a caller who stops reading early (break) also ends the HTTP request.
    const controller = new AbortController();
    const forward = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) forward();
    else request.signal?.addEventListener('abort', forward, { once: true });
    let completed = false;
    try {
      yield* this.readStream(model, conf, request, controller.signal);
      completed = true;
    } finally {
      request.signal?.removeEventListener('abort', forward);
      if (!completed) controller.abort();
    }
  }

  private async *readStream(model: LanguageModel, conf: Conf, request: AiChatRequest, signal: AbortSignal): AsyncGenerator<AiStreamPart> {
    const { system, messages } = toModelMessages(request.messages);
    let tools: ToolSet | undefined;
    if (request.tools?.length) {
      tools = {};
      for (const definition of request.tools) tools[definition.name] = tool({ description: definition.description, inputSchema: jsonSchema(definition.parameters as any) });
    }
    const result = streamText({
      model,
      system,
      messages,
      tools,
      temperature: request.temperature ?? conf.temperature,
      maxOutputTokens: request.maxOutputTokens ?? conf.maxTokens,
      topP: conf.topP,
      topK: conf.topK,
      stopSequences: conf.stop,
      seed: conf.seed,
      presencePenalty: conf.presencePenalty,
      frequencyPenalty: conf.frequencyPenalty,
      providerOptions: this.providerOptions(conf),
      // Structured output: the vendor's JSON mode where the AI SDK has one (the caller validates).
      output: request.responseFormat ? Output.object({ schema: jsonSchema(request.responseFormat.schema as any), name: request.responseFormat.name }) : undefined,
      maxRetries: 0,
      abortSignal: signal,
      // Errors arrive as `error` parts below; the default handler would print them.
      onError: () => undefined,
    });
    let finish: AiStreamPart | undefined;
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'text-delta':
          if (part.text) yield { type: 'text-delta', delta: part.text };
          break;
        case 'tool-call':
          yield { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: part.input };
          break;
        case 'error':
          throw part.error;
        case 'abort':
          throw abortReason(request.signal);
        case 'finish':
          finish = {
            type: 'finish',
            finishReason: finishReasons[part.finishReason] ?? 'other',
            usage: { inputTokens: part.totalUsage.inputTokens ?? 0, outputTokens: part.totalUsage.outputTokens ?? 0 },
          };
          break;
        default:
          break;
      }
    }
    if (request.signal?.aborted) throw abortReason(request.signal);
    if (!finish) throw aiErrors.unavailable(`The stream from ${this.vendorFor(conf)} ended before it finished.`);
    yield finish;
  }

  /** Embeddings through an AI SDK embedding model, with the same retries and error mapping. */
  protected async embedWith(model: EmbeddingModel, conf: Conf, request: AiEmbedRequest, providerOptions?: Record<string, Record<string, any>>): Promise<AiEmbedResult> {
    if (request.texts.length === 0) return { embeddings: [], usage: { inputTokens: 0 } };
    return callWithRetries(
      async () => {
        const result = await embedMany({ model, values: request.texts, maxRetries: 0, abortSignal: request.signal, providerOptions });
        return { embeddings: result.embeddings, usage: { inputTokens: result.usage.tokens ?? 0 } };
      },
      { policy: this.policyFor(conf), signal: request.signal, mapError: this.mapError(conf) },
    );
  }
}
