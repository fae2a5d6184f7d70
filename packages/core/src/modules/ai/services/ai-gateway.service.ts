import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { networkGuardServiceIdentifier, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { entityManagerServiceIdentifier } from '../../../kernel/tokens.js';
import { aiErrors, type AiChatRequest, type AiEmbedResult, type AiGateway, type AiStreamPart, type AiToolDefinition, type AiUsage } from '../../../ports/ai-provider.js';
import { redactProviderError } from '../../../ports/provider-errors.js';
import type { AiConfig, AiPrice } from '../ai.config.js';
import { AiModel } from '../entities/ai-model.entity.js';
import { aiConfigServiceIdentifier } from '../tokens.js';
import { AiModelService, modelNotFound } from './ai-model.service.js';
import { AiToolService } from './ai-tool.service.js';

const isUuid = (value: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);

/**
 * The `AiGateway` of the port: resolves a model or tool the caller may use, decrypts its conf,
 * picks the provider by `service` and prices usage. A provider's error leaves it with the model's
 * secrets removed and its cause summarised (`redactProviderError`). Each call opens its own unit of work.
 */
@injectable()
export class AiGatewayService implements AiGateway {
  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(AiModelService) private readonly models: AiModelService,
    @inject(AiToolService) private readonly tools: AiToolService,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(networkGuardServiceIdentifier) private readonly guard: NetworkGuard,
  ) {}

  async *chat(input: { userId: string; modelId: string; request: AiChatRequest }): AsyncIterable<AiStreamPart> {
    const model = await this.models.usable(this.root.fork(), input.userId, input.modelId);
    const provider = this.models.requireProvider(model);
    const conf = provider.parseConf(this.models.openConf(model));
    try {
      // The provider's HTTP calls go through the network guard (a model's baseURL is checked on every connection).
      yield* provider.chat(conf, { ...input.request, fetch: this.guard.fetch });
    } catch (error) {
      // Whatever the adapter let through, no secret of the model and no request body goes further.
      throw redactProviderError(error, this.models.secretTexts(model));
    }
  }

  /**
   * Embeds `texts` with the model `modelId` for the deployment itself (the vector database's
   * configured embedder), not on a user's behalf: no ownership check, the operator named the model.
   */
  async embed(input: { modelId: string; texts: string[]; signal?: AbortSignal }): Promise<AiEmbedResult> {
    const model = await this.model(input.modelId);
    const provider = this.models.requireProvider(model);
    if (!provider.embed) throw aiErrors.badRequest(`The AI provider "${provider.service}" of model ${model.id} does not offer embeddings.`);
    try {
      return await provider.embed(provider.parseConf(this.models.openConf(model)), { texts: input.texts, signal: input.signal, fetch: this.guard.fetch });
    } catch (error) {
      throw redactProviderError(error, this.models.secretTexts(model));
    }
  }

  /** Checks, before any credit is reserved, that the model exists for the user and has a provider. */
  async check(em: EntityManager, userId: string, modelId: string): Promise<AiModel> {
    const model = await this.models.usable(em, userId, modelId);
    this.models.requireProvider(model);
    return model;
  }

  async price(modelId: string, usage: AiUsage): Promise<number> {
    return priceOf(this.priceFor(await this.model(modelId)), usage);
  }

  async estimate(modelId: string): Promise<number> {
    const model = await this.model(modelId);
    const maxTokens = [model.conf.maxTokens, model.conf.maxOutputTokens, model.conf.max_tokens].find((v): v is number => typeof v === 'number' && v > 0);
    const cost = priceOf(this.priceFor(model), { inputTokens: this.config.pricing.reserveInputTokens, outputTokens: maxTokens ?? this.config.pricing.reserveOutputTokens });
    return Math.max(1, cost);
  }

  async toolDefinitions(input: { userId: string; toolIds: readonly string[] }): Promise<AiToolDefinition[]> {
    return this.tools.definitions(await this.tools.usable(this.root.fork(), input.userId, input.toolIds));
  }

  async callTool(input: { userId: string; toolIds: readonly string[]; toolName: string; args: unknown; signal?: AbortSignal }): Promise<unknown> {
    const tools = await this.tools.usable(this.root.fork(), input.userId, input.toolIds);
    return this.tools.call(tools, input.toolName, input.args, {}, input.signal);
  }

  /** The price entry of a model: by AI model id, then `<service>/<conf.model>`, then `<service>`, then the default. */
  priceFor(model: Pick<AiModel, 'id' | 'service' | 'conf'>): AiPrice {
    const table = this.config.pricing.models;
    const name = typeof model.conf.model === 'string' ? model.conf.model : null;
    return table[model.id] ?? (name && model.service ? table[`${model.service}/${name}`] : undefined) ?? (model.service ? table[model.service] : undefined) ?? this.config.pricing.default;
  }

  private async model(modelId: string): Promise<AiModel> {
    const model = isUuid(modelId) ? await this.root.fork().findOne(AiModel, { id: modelId }) : null;
    if (!model) throw modelNotFound(modelId);
    return model;
  }
}

/** Whole credits, rounded up: `input / 1000 * price.input + output / 1000 * price.output`. */
export function priceOf(price: AiPrice, usage: AiUsage): number {
  const exact = (Math.max(0, usage.inputTokens) * price.input + Math.max(0, usage.outputTokens) * price.output) / 1000;
  return Math.max(0, Math.ceil(exact - 1e-9));
}
