import type { APICallError } from '@ai-sdk/provider';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { aiErrors, type AiEmbedRequest, type AiEmbedResult, type TrellisError } from '@trellis/core';
import { AiSdkProvider, ConfReader, readSamplingConf, retryAfterSeconds, type AiAdapterOptions, type AiSdkConf } from '@trellis/ai-sdk';
import type { LanguageModel } from 'ai';

export const geminiDefaultBaseUrl = 'https://generativelanguage.googleapis.com/v1beta';

/** The normalised `conf` of a `gemini` model. */
export interface GeminiConf extends AiSdkConf {
  apiKey: string;
  baseURL: string;
  embeddingModel: string;
  dimensions?: number;
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
  protected readonly vendor = 'Gemini';

  constructor(options: GeminiProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): GeminiConf {
    const reader = new ConfReader(conf, 'gemini');
    const model = reader.requiredString('model', 'e.g. "gemini-2.5-flash"');
    const apiKey = reader.requiredString('apiKey', 'a Gemini API key from Google AI Studio');
    const baseURL = reader.url('baseURL') ?? geminiDefaultBaseUrl;
    const sampling = readSamplingConf(reader, { temperatureMax: 2, topK: true, penalties: true, seed: true });
    const embeddingModel = reader.string('embeddingModel') ?? 'gemini-embedding-001';
    const dimensions = reader.number('dimensions', { min: 1, integer: true });
    reader.done();
    return { model, apiKey, baseURL, embeddingModel, dimensions, ...sampling };
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
