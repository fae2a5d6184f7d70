import type { TSchema } from '@sinclair/typebox';
import type { ServiceIdentifier } from 'inversify';
import { TrellisError } from '../kernel/errors.js';

/**
 * The AiProvider port: one model family's chat (streamed, with tool calls) and embeddings, behind
 * one typed stream of parts, so that conversations, LLM blocks in runs and AI tools all read one
 * shape whatever the vendor.
 *
 * Contract:
 * - `service` is the short lower-case name an AI model's `service` field selects (`openai`,
 *   `anthropic`, `gemini`, `dify`, or your own).
 * - `parseConf` validates a model's provider-specific `conf` (model name, base URL, API key,
 *   temperature, max tokens, ...) and returns the normalised settings, or throws
 *   `aiErrors.invalidConf(issues)` (422 `invalid_model_conf` with `details`). It never calls the
 *   network. `secretConfKeys` names the `conf` keys Trellis encrypts at rest and masks in every
 *   response (`apiKey` by default).
 * - `confSchema` (optional) is the JSON Schema of `conf` that `parseConf` checks (a TypeBox
 *   `Type.Object`, which is a JSON Schema object), with a `description` on each field, so a host
 *   can publish what each service accepts and an editor can offer a form. `parseConf` accepts what
 *   the schema accepts, except for rules across fields the schema cannot say (the adapter
 *   documents those), and reports what it refuses as `details` with the field, a constraint name
 *   and a message.
 * - `chat` yields `AiStreamPart`s: any number of `text-delta`s and `tool-call`s, then exactly one
 *   `finish` with the usage the provider reported. It stops promptly when `request.signal` aborts
 *   (throwing the signal's reason or an `AbortError`). Failures throw `TrellisError`s from
 *   `aiErrors` (`ai_auth_failed`, `ai_rate_limited` with `retryAfterSeconds`, `ai_unavailable`,
 *   `ai_bad_request`). The adapter retries with backoff where the provider says a retry may
 *   succeed (429 with `retry-after`, 5xx), but never after the first part was yielded.
 * - Every HTTP call goes through `request.fetch` when the caller gives one (the server's network
 *   guard); adapters never open connections of their own around it.
 * - `chat` runs one model turn: it does not execute tools. The caller runs tool calls and sends
 *   the results back as `tool` messages in the next request.
 * - `embed` (optional) returns one vector per input text, in order.
 * - Adapters are plain classes with an options object and no container decorators. Bind every
 *   provider a deployment offers with
 *   `provide(aiProvidersServiceIdentifier, [new OpenAiProvider(), new AnthropicProvider()])`.
 */
export interface AiProvider<Conf = Record<string, unknown>> {
  readonly service: string;
  /** Keys of `conf` that hold secrets (encrypted at rest, masked in responses). Default `['apiKey']`. */
  readonly secretConfKeys?: readonly string[];
  /** The JSON Schema of `conf` (a JSON Schema object; TypeBox builds one), for hosts and editors to publish. */
  readonly confSchema?: TSchema;
  parseConf(conf: Record<string, unknown>): Conf;
  chat(conf: Conf, request: AiChatRequest): AsyncIterable<AiStreamPart>;
  embed?(conf: Conf, request: AiEmbedRequest): Promise<AiEmbedResult>;
}

export const aiProvidersServiceIdentifier: ServiceIdentifier<readonly AiProvider<any>[]> = Symbol.for('@trellis/core/AiProviders');

/** A JSON Schema object (draft 2020-12 subset that model vendors accept for tool parameters). */
export type JsonSchemaObject = Record<string, unknown>;

export interface AiToolCall {
  toolCallId: string;
  toolName: string;
  /** Parsed JSON arguments the model produced. */
  input: unknown;
}

export type AiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: AiToolCall[] }
  | { role: 'tool'; toolCallId: string; toolName: string; content: string };

/** A function the model may call. */
export interface AiToolDefinition {
  /** `^[a-zA-Z0-9_-]{1,64}$`, unique within a request. */
  name: string;
  description: string;
  parameters: JsonSchemaObject;
}

export interface AiChatRequest {
  messages: AiMessage[];
  tools?: AiToolDefinition[];
  /** Overrides of the model's conf for this call. */
  temperature?: number;
  maxOutputTokens?: number;
  /**
   * Asks for a JSON answer matching `schema` (structured output). Adapters use the vendor's native
   * JSON mode (`response_format` `json_schema` or `json_object`) where they have one and ignore it
   * otherwise; the caller states the schema in the prompt too and validates the answer itself.
   */
  responseFormat?: { type: 'json'; schema: JsonSchemaObject; name?: string };
  signal?: AbortSignal;
  /** Opaque id of the caller's conversation or run, for providers that keep their own thread (Dify). */
  threadId?: string;
  /**
   * The fetch every HTTP call of this request must go through: the server's network guard
   * (`NetworkGuard.fetch`), which checks each connection's address. Adapters pass it to their SDK
   * (or call it); an adapter's own `fetch` option, when set, takes its place.
   */
  fetch?: typeof globalThis.fetch;
}

export interface AiUsage {
  inputTokens: number;
  outputTokens: number;
}

export type AiFinishReason = 'stop' | 'length' | 'tool-calls' | 'content-filter' | 'error' | 'other';

export type AiStreamPart =
  | { type: 'text-delta'; delta: string }
  | ({ type: 'tool-call' } & AiToolCall)
  | { type: 'finish'; finishReason: AiFinishReason; usage: AiUsage };

export interface AiEmbedRequest {
  texts: string[];
  signal?: AbortSignal;
  /**
   * The fetch every HTTP call of this request must go through: the server's network guard
   * (`NetworkGuard.fetch`), which checks each connection's address. Adapters pass it to their SDK
   * (or call it); an adapter's own `fetch` option, when set, takes its place.
   */
  fetch?: typeof globalThis.fetch;
}

export interface AiEmbedResult {
  embeddings: number[][];
  usage: { inputTokens: number };
}

/** The AI error vocabulary every adapter maps its vendor's failures into. */
export const aiErrors = {
  authFailed: (message = 'The AI provider refused the credentials configured for this model.', cause?: unknown) =>
    new TrellisError('unavailable', 'ai_auth_failed', message, { cause, status: 502, expose: true }),
  rateLimited: (retryAfterSeconds: number | null, message = 'The AI provider is rate limiting requests.', cause?: unknown) =>
    new TrellisError('rate_limited', 'ai_rate_limited', message, {
      cause,
      extra: retryAfterSeconds === null ? undefined : { retry_after: retryAfterSeconds },
      headers: retryAfterSeconds === null ? undefined : { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
  unavailable: (message = 'The AI provider is unavailable.', cause?: unknown) =>
    new TrellisError('unavailable', 'ai_unavailable', message, { cause, status: 503, expose: true }),
  badRequest: (message: string, cause?: unknown) => new TrellisError('bad_request', 'ai_bad_request', message, { cause }),
  notConfigured: (service: string | null) =>
    new TrellisError(
      'bad_request',
      'ai_provider_not_configured',
      service
        ? `No AI provider adapter for service "${service}" is installed in this deployment. Bind one with provide(aiProvidersServiceIdentifier, [...]) (see docs/ai.md).`
        : 'This AI model names no service. Set its service to an installed provider adapter (see docs/ai.md).',
    ),
  invalidConf: (details: Array<{ field: string; constraint: string; message: string }>) =>
    new TrellisError('validation', 'invalid_model_conf', 'The model conf is not valid for its service.', { details }),
};

/**
 * What the rest of Trellis (runs, conversations, tools) asks of the AI layer, implemented by the
 * `ai` module. It resolves an AI model or tool the caller may use, decrypts its conf, picks the
 * provider adapter by `service`, and prices usage in credits. It does not reserve credits: callers
 * (a conversation turn, a run) reserve and settle through the billing module.
 */
export interface AiGateway {
  /** Streams one model turn with the model `modelId`, which `userId` must be allowed to use. */
  /** `scope`: who the call is recorded for (a model call frame of modules/ai, passed down explicitly). */
  chat(input: { userId: string; modelId: string; request: AiChatRequest; scope?: ModelCallFrame }): AsyncIterable<AiStreamPart>;
  /** Credits that `usage` on model `modelId` costs (configuration: credits per 1,000 tokens). */
  price(modelId: string, usage: AiUsage): Promise<number>;
  /** A conservative reservation for one turn of `modelId` before its usage is known. */
  estimate(modelId: string): Promise<number>;
  /** The function definitions of the given AI tools' actions, as offered to a model. */
  toolDefinitions(input: { userId: string; toolIds: readonly string[] }): Promise<AiToolDefinition[]>;
  /** Runs the action a model named (a name from `toolDefinitions`) with the model's input; the result is JSON. */
  callTool(input: { userId: string; toolIds: readonly string[]; toolName: string; args: unknown; signal?: AbortSignal; idempotencyKey?: string; toolCallId?: string }): Promise<unknown>;
}

export const aiGatewayServiceIdentifier: ServiceIdentifier<AiGateway> = Symbol.for('@trellis/core/AiGateway');

/**
 * Who a provider call is made for: the run (its attempt, credit hold and block) or the
 * conversation turn. A frame of it is passed down explicitly (run attempt → block → model turn →
 * AI gateway): an AsyncLocalStorage would switch Node 20's promise hooks on for the whole process
 * (see test/integration/promise-hooks.int.spec.ts).
 */
export interface ModelCallScope {
  runId?: string;
  attempt?: number;
  reservationId?: string | null;
  blockPath?: string;
  conversationId?: string;
  turnId?: string;
  teamId?: string | null;
  userId?: string | null;
}

/** A scope with the calls made so far per block path, for the whole run attempt or turn (a block run twice goes on counting). */
export interface ModelCallFrame extends ModelCallScope {
  readonly counters: Map<string, number>;
}
