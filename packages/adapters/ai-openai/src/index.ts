import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AiEmbedRequest, AiEmbedResult } from '@trellis/core';
import { Type } from '@sinclair/typebox';
import { AiSdkProvider, confField, readConf, samplingField, type AiAdapterOptions, type ConfOf, type ConfRule } from '@trellis/ai-sdk';
import type { EmbeddingModel, LanguageModel } from 'ai';

export const openAiDefaultBaseUrl = 'https://api.openai.com/v1';

/**
 * What the `conf` of an `openai` model may hold. Rules across fields, checked by `parseConf`:
 * `apiKey` is required when the compatibility is `openai` (OpenAI's own API), and `queryParams`
 * is only accepted with `compatible`.
 */
export const openAiConfSchema = Type.Object(
  {
    model: confField.required('The model name, e.g. "gpt-4o-mini" or "llama3.1:8b".', 'the model name, e.g. "gpt-4o-mini" or "llama3.1:8b"'),
    baseURL: confField.url(`The API base URL: OpenAI's (${openAiDefaultBaseUrl}, the default) or any OpenAI-compatible server's (Ollama, vLLM, DeepSeek, ...).`, {
      default: openAiDefaultBaseUrl,
    }),
    compatibility: confField.oneOf(
      ['openai', 'compatible'] as const,
      "`openai`: OpenAI's own API through @ai-sdk/openai (API key required). `compatible`: any server speaking the OpenAI Chat Completions format through @ai-sdk/openai-compatible. Default: `openai` for api.openai.com (or no baseURL), else `compatible`.",
    ),
    apiKey: confField.string('The API key; required for OpenAI, often not needed by servers of your own. Encrypted at rest, answered masked.'),
    organization: confField.string('The OpenAI organization id (compatibility `openai`).'),
    project: confField.string('The OpenAI project id (compatibility `openai`).'),
    queryParams: confField.stringRecord('Query parameters added to every URL (compatibility `compatible` only; e.g. an Azure api-version).'),
    temperature: samplingField.temperature(2),
    topP: samplingField.topP(),
    maxTokens: samplingField.maxTokens(),
    stop: samplingField.stop(),
    seed: samplingField.seed(),
    presencePenalty: samplingField.presencePenalty(),
    frequencyPenalty: samplingField.frequencyPenalty(),
    headers: samplingField.headers(),
    maxRetries: samplingField.maxRetries(),
    embeddingModel: confField.string('The embedding model (default: text-embedding-3-small for OpenAI, else `model`).'),
    dimensions: confField.integer("The length of the embedding vectors (the model's own when unset).", { minimum: 1 }),
  },
  { additionalProperties: false, title: 'openai model conf' },
);

/** The normalised `conf` of an `openai` model. */
export interface OpenAiConf extends ConfOf<typeof openAiConfSchema> {
  /**
   * `openai`: OpenAI's own API through `@ai-sdk/openai` (Chat Completions, API key required).
   * `compatible`: any server speaking the OpenAI Chat Completions format through
   * `@ai-sdk/openai-compatible` (Ollama, vLLM, llama.cpp server, LM Studio, DeepSeek, Qianfan, ...).
   */
  compatibility: 'openai' | 'compatible';
  baseURL: string;
}

export type OpenAiProviderOptions = AiAdapterOptions;

const isOpenAiHost = (url: string) => {
  try {
    return new URL(url).hostname === 'api.openai.com';
  } catch {
    return false;
  }
};

/** The compatibility `conf` sets, else the one its base URL implies. */
const compatibilityOf = (settings: { compatibility?: OpenAiConf['compatibility']; baseURL?: string }): OpenAiConf['compatibility'] =>
  settings.compatibility ?? (settings.baseURL === undefined || isOpenAiHost(settings.baseURL) ? 'openai' : 'compatible');

const openAiRules: ConfRule<typeof openAiConfSchema> = (settings, fail) => {
  if (compatibilityOf(settings) !== 'openai') return;
  if (!settings.apiKey) fail('apiKey', 'required', 'conf.apiKey is required for OpenAI (servers of your own: set conf.baseURL; those often need no key).');
  if (settings.queryParams) fail('queryParams', 'compatibleOnly', 'conf.queryParams is only used with compatibility "compatible".');
};

/**
 * The `openai` AiProvider: OpenAI and every OpenAI-compatible server, chosen by `conf.baseURL`.
 * Chat streams Chat Completions with tools and usage (`stream_options.include_usage`);
 * embeddings use `/embeddings`.
 */
export class OpenAiProvider extends AiSdkProvider<OpenAiConf> {
  readonly service = 'openai';
  readonly confSchema = openAiConfSchema;
  protected readonly vendor = 'the OpenAI-compatible server';

  constructor(options: OpenAiProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): OpenAiConf {
    const settings = readConf(openAiConfSchema, conf, this.service, openAiRules);
    return { ...settings, compatibility: compatibilityOf(settings), baseURL: settings.baseURL ?? openAiDefaultBaseUrl };
  }

  /** `OpenAI` for OpenAI's own API, else `the OpenAI-compatible server`. */
  protected override vendorFor(conf: OpenAiConf): string {
    return conf.compatibility === 'openai' && isOpenAiHost(conf.baseURL) ? 'OpenAI' : this.vendor;
  }

  protected languageModel(conf: OpenAiConf, fetch?: typeof globalThis.fetch): LanguageModel {
    if (conf.compatibility === 'openai') return this.openai(conf, fetch).chat(conf.model);
    return this.compatible(conf, fetch).chatModel(conf.model);
  }

  private openai(conf: OpenAiConf, fetch: typeof globalThis.fetch | undefined) {
    return createOpenAI({ apiKey: conf.apiKey, baseURL: conf.baseURL, organization: conf.organization, project: conf.project, headers: conf.headers, fetch });
  }

  private compatible(conf: OpenAiConf, fetch: typeof globalThis.fetch | undefined) {
    return createOpenAICompatible({
      name: 'openaiCompatible',
      baseURL: conf.baseURL,
      apiKey: conf.apiKey,
      headers: conf.headers,
      queryParams: conf.queryParams,
      includeUsage: true,
      fetch,
    });
  }

  /** Embeddings with `conf.embeddingModel` (OpenAI default `text-embedding-3-small`; other servers: `conf.model`). */
  async embed(conf: OpenAiConf, request: AiEmbedRequest): Promise<AiEmbedResult> {
    let model: EmbeddingModel;
    const fetch = this.fetchFor(request);
    if (conf.compatibility === 'openai') model = this.openai(conf, fetch).embedding(conf.embeddingModel ?? 'text-embedding-3-small');
    else model = this.compatible(conf, fetch).embeddingModel(conf.embeddingModel ?? conf.model);
    const providerOptions = conf.dimensions === undefined ? undefined : { openai: { dimensions: conf.dimensions }, openaiCompatible: { dimensions: conf.dimensions } };
    return this.embedWith(model, conf, request, providerOptions);
  }
}
