import type { APICallError } from '@ai-sdk/provider';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { aiErrors, type AiEmbedRequest, type AiEmbedResult, type TrellisError } from '@trellis/core';
import { Type } from '@sinclair/typebox';
import { AiSdkProvider, confField, readConf, retryAfterSeconds, samplingField, type AiAdapterOptions, type ConfOf } from '@trellis/ai-sdk';
import type { LanguageModel } from 'ai';

export const geminiDefaultBaseUrl = 'https://generativelanguage.googleapis.com/v1beta';
export const geminiDefaultEmbeddingModel = 'gemini-embedding-001';

/** What the `conf` of a `gemini` model may hold. */
export const geminiConfSchema = Type.Object(
  {
    model: confField.required('The Gemini model, e.g. "gemini-2.5-flash".', 'e.g. "gemini-2.5-flash"'),
    apiKey: confField.required('A Gemini API key from Google AI Studio. Encrypted at rest, answered masked.', 'a Gemini API key from Google AI Studio'),
    baseURL: confField.url(`The Gemini API base URL (default ${geminiDefaultBaseUrl}).`, { default: geminiDefaultBaseUrl }),
    temperature: samplingField.temperature(2),
    topP: samplingField.topP(),
    topK: samplingField.topK(),
    maxTokens: samplingField.maxTokens(),
    stop: samplingField.stop(),
    seed: samplingField.seed(),
    presencePenalty: samplingField.presencePenalty(),
    frequencyPenalty: samplingField.frequencyPenalty(),
    headers: samplingField.headers(),
    maxRetries: samplingField.maxRetries(),
    embeddingModel: confField.string(`The embedding model (default ${geminiDefaultEmbeddingModel}).`, { default: geminiDefaultEmbeddingModel }),
    dimensions: confField.integer('The length of the embedding vectors (the model\'s own when unset).', { minimum: 1 }),
  },
  { additionalProperties: false, title: 'gemini model conf' },
);

/** The normalised `conf` of a `gemini` model. */
export interface GeminiConf extends ConfOf<typeof geminiConfSchema> {
  baseURL: string;
  embeddingModel: string;
}

export type GeminiProviderOptions = AiAdapterOptions;

/** `"28s"`, `"1.5s"` (a protobuf Duration in JSON) as seconds. */
const durationSeconds = (value: unknown): number | null => {
  if (typeof value !== 'string') return null;
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return match ? Number(match[1]) : null;
};

/**
 * The `gemini` AiProvider: Google's Gemini API (`streamGenerateContent` with function calls,
 * usage from `usageMetadata`, `batchEmbedContents`), via `@ai-sdk/google`. The Gemini API answers
 * a wrong key with 400 `API_KEY_INVALID` (mapped to `ai_auth_failed`) and gives a 429's wait as a
 * `RetryInfo` detail (read when no `retry-after` header is sent).
 */
export class GeminiProvider extends AiSdkProvider<GeminiConf> {
  readonly service = 'gemini';
  readonly confSchema = geminiConfSchema;
  protected readonly vendor = 'Gemini';

  constructor(options: GeminiProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): GeminiConf {
    const settings = readConf(geminiConfSchema, conf, this.service);
    return { ...settings, baseURL: settings.baseURL ?? geminiDefaultBaseUrl, embeddingModel: settings.embeddingModel ?? geminiDefaultEmbeddingModel };
  }

  private google(conf: GeminiConf, fetch: typeof globalThis.fetch | undefined) {
    return createGoogleGenerativeAI({ apiKey: conf.apiKey, baseURL: conf.baseURL, headers: conf.headers, fetch });
  }

  protected languageModel(conf: GeminiConf, fetch?: typeof globalThis.fetch): LanguageModel {
    return this.google(conf, fetch)(conf.model);
  }

  protected override mapVendorError(error: APICallError): TrellisError | undefined {
    const body = (error.data ?? safeJson(error.responseBody)) as { error?: { details?: Array<Record<string, unknown>> } } | undefined;
    const details = body?.error?.details ?? [];
    if (details.some((detail) => detail.reason === 'API_KEY_INVALID') || /API key not valid/i.test(error.message)) {
      return aiErrors.authFailed(`Gemini refused the API key configured for this model (HTTP ${error.statusCode}).`, error);
    }
    if (error.statusCode === 429 && retryAfterSeconds(error.responseHeaders) === null) {
      const retryInfo = details.find((detail) => String(detail['@type']).endsWith('google.rpc.RetryInfo'));
      const wait = durationSeconds(retryInfo?.retryDelay);
      if (wait !== null) return aiErrors.rateLimited(wait, `Gemini is rate limiting requests: ${error.message}`, error);
    }
    return undefined;
  }

  /** Embeddings with `conf.embeddingModel` (default `gemini-embedding-001`). */
  async embed(conf: GeminiConf, request: AiEmbedRequest): Promise<AiEmbedResult> {
    const providerOptions = conf.dimensions === undefined ? undefined : { google: { outputDimensionality: conf.dimensions } };
    return this.embedWith(this.google(conf, this.fetchFor(request)).embedding(conf.embeddingModel), conf, request, providerOptions);
  }
}

function safeJson(text: string | undefined): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
