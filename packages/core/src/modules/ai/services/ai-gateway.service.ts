import type { ModelCallFrame } from './model-call-scope.js';
import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { networkGuardServiceIdentifier, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { entityManagerServiceIdentifier } from '../../../kernel/tokens.js';
import { aiErrors, type AiProvider, type AiChatRequest, type AiEmbedResult, type AiFinishReason, type AiGateway, type AiStreamPart, type AiToolCall, type AiToolDefinition, type AiUsage } from '../../../ports/ai-provider.js';
import { redactProviderError } from '../../../ports/provider-errors.js';
import type { AiConfig, AiPrice } from '../ai.config.js';
import { AiModel } from '../entities/ai-model.entity.js';
import { aiConfigServiceIdentifier } from '../tokens.js';
import { AiModelService, modelNotFound } from './ai-model.service.js';
import { AiToolService } from './ai-tool.service.js';
import { ModelCallRecorder, type ModelCallModel } from './model-call-recorder.js';
import { SpanKind, withSpan } from '../../../kernel/observability/tracing.js';
import { isUuid } from '../../../kernel/crypto.js';


/**
 * The `AiGateway` of the port: resolves a model or tool the caller may use, decrypts its conf,
 * picks the provider by `service` and prices usage. A provider's error leaves it with the model's
 * secrets removed and its cause summarised (`redactProviderError`). Each call opens its own unit of work.
 */
@injectable()
export class AiGatewayService implements AiGateway {
  /** `embed`'s set-up models, by id (see `embedSetup`). */
  private readonly embedSetups = new Map<string, EmbedSetup>();

  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(AiModelService) private readonly models: AiModelService,
    @inject(AiToolService) private readonly tools: AiToolService,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(networkGuardServiceIdentifier) private readonly guard: NetworkGuard,
    @inject(ModelCallRecorder) private readonly recorder: ModelCallRecorder,
  ) {}

  async *chat(input: { userId: string; modelId: string; request: AiChatRequest; scope?: ModelCallFrame }): AsyncIterable<AiStreamPart> {
    const model = await this.models.usable(this.root.fork(), input.userId, input.modelId);
    const provider = this.models.requireProvider(model);
    const conf = provider.parseConf(this.models.openConf(model));
    // Every provider call is recorded (docs/observability.md): its record, its GenAI span, its counters.
    const call = this.recorder.chat(describe(model, input.userId), input.request, input.scope);
    const toolCalls: AiToolCall[] = [];
    let usage: AiUsage | null = null;
    let finishReason: AiFinishReason | null = null;
    try {
      // The provider's HTTP calls go through the network guard (a model's baseURL is checked on every connection).
      for await (const part of provider.chat(conf, { ...input.request, fetch: this.guard.fetch })) {
        if (part.type === 'finish') {
          usage = part.usage;
          finishReason = part.finishReason;
        } else {
          call.firstToken();
          if (part.type === 'tool-call') toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
        }
        yield part;
      }
    } catch (error) {
      // Whatever the adapter let through, no secret of the model and no request body goes further.
      const redacted = redactProviderError(error, this.models.secretTexts(model));
      await call.fail(redacted, { toolCalls, usage, credits: usage ? priceOf(this.priceFor(model), usage) : 0, cancelled: input.request.signal?.aborted === true });
      throw redacted;
    }
    const reported = usage ?? { inputTokens: 0, outputTokens: 0 };
    await call.finish({ toolCalls, usage: reported, finishReason, credits: priceOf(this.priceFor(model), reported) });
  }

  /**
   * Embeds `texts` with the model `modelId` for the deployment itself (the vector database's
   * configured embedder), not on a user's behalf: no ownership check, the operator named the model.
   */
  async embed(input: { modelId: string; texts: string[]; signal?: AbortSignal; scope?: ModelCallFrame }): Promise<AiEmbedResult> {
    const { model, provider, conf, secrets } = await this.embedSetup(input.modelId);
    const started = Date.now();
    let result: AiEmbedResult;
    try {
      result = await provider.embed!(conf, { texts: input.texts, signal: input.signal, fetch: this.guard.fetch });
    } catch (error) {
      const redacted = redactProviderError(error, secrets);
      await this.recorder.embeddings(describe(model), input.texts.length, started, { usage: null, credits: 0, error: redacted }, input.scope);
      throw redacted;
    }
    await this.recorder.embeddings(describe(model), input.texts.length, started, { usage: result.usage, credits: priceOf(this.priceFor(model), { inputTokens: result.usage.inputTokens, outputTokens: 0 }) }, input.scope);
    return result;
  }

  /**
   * What `embed` needs of a model: its provider, its conf decrypted and parsed, its secrets' texts.
   * Kept per model while the model's stored `service` and `conf` read the same: each call reads
   * those two columns (one small row, no entity) and sets the model up again only when they
   * changed, so an updated key or conf is used from the next call on and a deleted model fails at
   * once, whichever process changed it.
   */
  private async embedSetup(modelId: string): Promise<EmbedSetup> {
    if (!isUuid(modelId)) throw modelNotFound(modelId);
    const em = this.root.fork();
    const meta = em.getMetadata().get(AiModel.name);
    const column = (property: 'service' | 'conf' | 'id') => meta.properties[property].fieldNames[0]!;
    const [row] = (await em
      .getConnection()
      .execute(`SELECT ${column('service')} AS service, ${column('conf')} AS conf FROM ${meta.tableName} WHERE ${column('id')} = ?`, [modelId], 'all')) as Array<{ service: string | null; conf: unknown }>;
    if (!row) {
      this.embedSetups.delete(modelId);
      throw modelNotFound(modelId);
    }
    const stored = typeof row.conf === 'string' ? row.conf : JSON.stringify(row.conf);
    const fingerprint = `${row.service ?? ''}\u0000${stored}`;
    const cached = this.embedSetups.get(modelId);
    if (cached?.fingerprint === fingerprint) return cached;
    const model = { id: modelId, service: row.service, conf: (typeof row.conf === 'string' ? JSON.parse(row.conf) : row.conf) as Record<string, unknown> };
    const provider = this.models.requireProvider(model as AiModel);
    if (!provider.embed) throw aiErrors.badRequest(`The AI provider "${provider.service}" of model ${model.id} does not offer embeddings.`);
    const setup: EmbedSetup = { fingerprint, model, provider, conf: provider.parseConf(this.models.openConf(model)), secrets: this.models.secretTexts(model) };
    // A bounded cache: the models the deployment embeds with are few.
    if (this.embedSetups.size >= 64) this.embedSetups.delete(this.embedSetups.keys().next().value!);
    this.embedSetups.set(modelId, setup);
    return setup;
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

  async callTool(input: { userId: string; toolIds: readonly string[]; toolName: string; args: unknown; signal?: AbortSignal; idempotencyKey?: string; toolCallId?: string }): Promise<unknown> {
    const attributes: Record<string, string> = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': input.toolName, 'gen_ai.tool.type': 'function' };
    if (input.toolCallId) attributes['gen_ai.tool.call.id'] = input.toolCallId;
    // One GenAI `execute_tool` span per tool execution (a tool block's, or a model's tool call).
    return withSpan(`execute_tool ${input.toolName}`, attributes, async () => {
      const tools = await this.tools.usable(this.root.fork(), input.userId, input.toolIds);
      return this.tools.call(tools, input.toolName, input.args, input.idempotencyKey ? { idempotencyKey: input.idempotencyKey } : {}, input.signal);
    }, SpanKind.INTERNAL);
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

/** A model set up for `embed`, with the fingerprint (service and stored conf) it was set up from. */
interface EmbedSetup {
  fingerprint: string;
  model: Pick<AiModel, 'id' | 'service' | 'conf'>;
  provider: AiProvider<any>;
  conf: unknown;
  secrets: string[];
}

/** What a record and a span say of a model. */
function describe(model: Pick<AiModel, 'id' | 'service' | 'conf'>, userId?: string): ModelCallModel {
  return { modelId: model.id, provider: model.service ?? null, model: typeof model.conf.model === 'string' ? model.conf.model : null, userId: userId ?? null };
}

/** Whole credits, rounded up: `input / 1000 * price.input + output / 1000 * price.output`. */
export function priceOf(price: AiPrice, usage: AiUsage): number {
  const exact = (Math.max(0, usage.inputTokens) * price.input + Math.max(0, usage.outputTokens) * price.output) / 1000;
  return Math.max(0, Math.ceil(exact - 1e-9));
}
