import { createAnthropic } from '@ai-sdk/anthropic';
import { Type } from '@sinclair/typebox';
import { AiSdkProvider, confField, readConf, samplingField, type AiAdapterOptions, type ConfOf } from '@trellis/ai-sdk';
import type { LanguageModel } from 'ai';

export const anthropicDefaultBaseUrl = 'https://api.anthropic.com/v1';

/** What the `conf` of an `anthropic` model may hold. */
export const anthropicConfSchema = Type.Object(
  {
    model: confField.required('The Claude model, e.g. "claude-sonnet-4-5".', 'e.g. "claude-sonnet-4-5"'),
    apiKey: confField.required('An Anthropic API key (sk-ant-...). Encrypted at rest, answered masked.', 'an Anthropic API key, sk-ant-...'),
    baseURL: confField.url(`The Messages API base URL (default ${anthropicDefaultBaseUrl}).`, { default: anthropicDefaultBaseUrl }),
    temperature: samplingField.temperature(1),
    topP: samplingField.topP(),
    topK: samplingField.topK(),
    maxTokens: samplingField.maxTokens(),
    stop: samplingField.stop(),
    headers: samplingField.headers(),
    maxRetries: samplingField.maxRetries(),
  },
  { additionalProperties: false, title: 'anthropic model conf' },
);

/** The normalised `conf` of an `anthropic` model. */
export interface AnthropicConf extends ConfOf<typeof anthropicConfSchema> {
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
  readonly confSchema = anthropicConfSchema;
  protected readonly vendor = 'Anthropic';

  constructor(options: AnthropicProviderOptions = {}) {
    super(options);
  }

  parseConf(conf: Record<string, unknown>): AnthropicConf {
    const settings = readConf(anthropicConfSchema, conf, this.service);
    return { ...settings, baseURL: settings.baseURL ?? anthropicDefaultBaseUrl };
  }

  protected languageModel(conf: AnthropicConf, fetch?: typeof globalThis.fetch): LanguageModel {
    return createAnthropic({ apiKey: conf.apiKey, baseURL: conf.baseURL, headers: conf.headers, fetch })(conf.model);
  }
}
