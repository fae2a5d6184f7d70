import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AiEmbedRequest, AiEmbedResult } from '@trellis/core';
import { AiSdkProvider, ConfReader, readSamplingConf, type AiAdapterOptions, type AiSdkConf } from '@trellis/ai-sdk';
import type { EmbeddingModel, LanguageModel } from 'ai';

export const openAiDefaultBaseUrl = 'https://api.openai.com/v1';

/** The normalised `conf` of an `openai` model. */
export interface OpenAiConf extends AiSdkConf {
  /**
   * `openai`: OpenAI's own API through `@ai-sdk/openai` (Chat Completions, API key required).
   * `compatible`: any server speaking the OpenAI Chat Completions format through
   * `@ai-sdk/openai-compatible` (Ollama, vLLM, llama.cpp server, LM Studio, DeepSeek, Qianfan, ...).
   */
  compatibility: 'openai' | 'compatible';
  baseURL: string;
  organization?: string;
  project?: string;
  queryParams?: Record<string, string>;
  embeddingModel?: string;
  dimensions?: number;
}

export type OpenAiProviderOptions = AiAdapterOptions;

const isOpenAiHost = (url: string) => {
  try {
    return new URL(url).hostname === 'api.openai.com';
  } catch {
    return false;
  }
};

/**
 * The `openai` AiProvider: OpenAI and every OpenAI-compatible server, chosen by `conf.baseURL`.
 * Chat streams Chat Completions with tools and usage (`stream_options.include_usage`);
 * embeddings use `/embeddings`.
 */
export class OpenAiProvider extends AiSdkProvider<OpenAiConf> {
  readonly service = 'openai';
  protected readonly vendor = 'the OpenAI-compatible server';

  constructor(options: OpenAiProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): OpenAiConf {
    const reader = new ConfReader(conf, 'openai');
    const model = reader.requiredString('model', 'the model name, e.g. "gpt-4o-mini" or "llama3.1:8b"');
    const baseURL = reader.url('baseURL');
    const explicit = reader.oneOf('compatibility', ['openai', 'compatible'] as const);
    const compatibility = explicit ?? (baseURL === undefined || isOpenAiHost(baseURL) ? 'openai' : 'compatible');
    const apiKey = reader.string('apiKey');
    if (compatibility === 'openai' && !apiKey) reader.fail('apiKey', 'required', 'conf.apiKey is required for OpenAI (servers of your own: set conf.baseURL; those often need no key).');
    const organization = reader.string('organization');
    const project = reader.string('project');
    const queryParams = reader.stringRecord('queryParams');
    if (compatibility === 'openai' && queryParams) reader.fail('queryParams', 'compatibleOnly', 'conf.queryParams is only used with compatibility "compatible".');
    const sampling = readSamplingConf(reader, { temperatureMax: 2, penalties: true, seed: true });
    const embeddingModel = reader.string('embeddingModel');
    const dimensions = reader.number('dimensions', { min: 1, integer: true });
    reader.done();
    return { model, compatibility, baseURL: baseURL ?? openAiDefaultBaseUrl, apiKey, organization, project, queryParams, embeddingModel, dimensions, ...sampling };
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
