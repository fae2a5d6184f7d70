import { createAnthropic } from '@ai-sdk/anthropic';
import { AiSdkProvider, ConfReader, readSamplingConf, type AiAdapterOptions, type AiSdkConf } from '@trellis/ai-sdk';
import type { LanguageModel } from 'ai';

export const anthropicDefaultBaseUrl = 'https://api.anthropic.com/v1';

/** The normalised `conf` of an `anthropic` model. */
export interface AnthropicConf extends AiSdkConf {
  apiKey: string;
  baseURL: string;
}

export type AnthropicProviderOptions = AiAdapterOptions;

/**
 * The `anthropic` AiProvider: Claude models through Anthropic's Messages API (streamed, with
 * `tool_use` blocks and usage), via `@ai-sdk/anthropic`. A 429 is retried after its `retry-after`
 * (or the `anthropic-ratelimit-*-reset` instants), 5xx and 529 (overloaded) with backoff. Anthropic
 * has no embeddings API: this provider offers none.
 */
export class AnthropicProvider extends AiSdkProvider<AnthropicConf> {
  readonly service = 'anthropic';
  protected readonly vendor = 'Anthropic';

  constructor(options: AnthropicProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): AnthropicConf {
    const reader = new ConfReader(conf, 'anthropic');
    const model = reader.requiredString('model', 'e.g. "claude-sonnet-4-5"');
    const apiKey = reader.requiredString('apiKey', 'an Anthropic API key, sk-ant-...');
    const baseURL = reader.url('baseURL') ?? anthropicDefaultBaseUrl;
    const sampling = readSamplingConf(reader, { temperatureMax: 1, topK: true });
    reader.done();
    return { model, apiKey, baseURL, ...sampling };
  }

  protected languageModel(conf: AnthropicConf, fetch?: typeof globalThis.fetch): LanguageModel {
    return createAnthropic({ apiKey: conf.apiKey, baseURL: conf.baseURL, headers: conf.headers, fetch })(conf.model);
  }
}
