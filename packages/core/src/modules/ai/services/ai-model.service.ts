import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { aiErrors, aiProvidersServiceIdentifier, type AiProvider } from '../../../ports/ai-provider.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { User } from '../../identity/index.js';
import { AiModel } from '../entities/ai-model.entity.js';
import { SecretBox, isSealed } from './secret-box.js';
import { keepMaskedSecrets, mapSecrets, maskConf, openSecrets, sealSecrets, secretTexts } from './secret-fields.js';
import { secretBoxServiceIdentifier } from '../tokens.js';
import { isUuid } from '../../../kernel/crypto.js';

export interface AiModelInput {
  name: string;
  desc?: string | null;
  service: string;
  conf: Record<string, unknown>;
}

export const modelNotFound = (id: string) => new TrellisError('not_found', 'model_not_found', `No AI model of yours has the id ${id}.`);


/**
 * AI model configurations: CRUD within one owner, conf validated by the provider adapter named by
 * `service`, every secret-bearing value (the adapter's `secretConfKeys`, secret-looking keys at any
 * depth, every `headers` value: see `mapSecrets`) sealed with AES-256-GCM before it reaches the
 * database and masked in every view. The only place a secret is decrypted is `openConf`, on the
 * way to the provider.
 */
@injectable()
export class AiModelService {
  private readonly providers: ReadonlyMap<string, AiProvider<any>>;

  constructor(
    @inject(aiProvidersServiceIdentifier) providers: readonly AiProvider<any>[],
    @inject(secretBoxServiceIdentifier) private readonly box: SecretBox,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
  ) {
    this.providers = new Map(providers.map((p) => [p.service, p]));
  }

  provider(service: string | null): AiProvider<any> | undefined {
    return service ? this.providers.get(service) : undefined;
  }

  /** The installed provider of a model, or 400 `ai_provider_not_configured`. */
  requireProvider(model: AiModel): AiProvider<any> {
    const provider = this.provider(model.service);
    if (!provider) throw aiErrors.notConfigured(model.service);
    return provider;
  }

  secretKeys(service: string | null): readonly string[] {
    return this.provider(service)?.secretConfKeys ?? ['apiKey'];
  }

  /** Secrets masked; safe to answer or log. */
  maskedConf(model: Pick<AiModel, 'service' | 'conf'>): Record<string, unknown> {
    return maskConf(model.conf, this.secretKeys(model.service));
  }

  /** The conf with its secrets decrypted, for the provider only (plain values of older rows pass as they are). */
  openConf(model: Pick<AiModel, 'conf'>): Record<string, unknown> {
    return openSecrets(this.box, model.conf);
  }

  /** The plain text of every secret of a model, to remove from what a provider answers. */
  secretTexts(model: Pick<AiModel, 'service' | 'conf'>): string[] {
    return secretTexts(this.openConf(model), this.secretKeys(model.service));
  }

  /**
   * The conf to store: the mask in place of a secret keeps the stored one, the provider (when
   * installed) validates the plain settings, then every secret-bearing value is sealed.
   */
  prepareConf(service: string | null, conf: Record<string, unknown>, previous: Record<string, unknown> | null): Record<string, unknown> {
    const keys = this.secretKeys(service);
    const stored = keepMaskedSecrets(conf, previous, keys);
    const provider = this.provider(service);
    if (provider) {
      try {
        provider.parseConf(this.openConf({ conf: stored }));
      } catch (error) {
        if (error instanceof TrellisError) throw error;
        throw aiErrors.invalidConf([{ field: 'conf', constraint: 'parseConf', message: error instanceof Error ? error.message : String(error) }]);
      }
    }
    return sealSecrets(this.box, stored, keys);
  }

  async list(em: EntityManager, ownerId: string, page: Paging): Promise<{ items: AiModel[]; total: number }> {
    const [items, total] = await em.findAndCount(AiModel, { owner: ownerId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async get(em: EntityManager, ownerId: string, id: string): Promise<AiModel> {
    const model = isUuid(id) ? await em.findOne(AiModel, { id, owner: ownerId }) : null;
    if (!model) throw modelNotFound(id);
    return model;
  }

  /** A model `userId` may use: one they own. */
  async usable(em: EntityManager, userId: string, id: string): Promise<AiModel> {
    return this.get(em, userId, id);
  }

  async create(em: EntityManager, ownerId: string, input: AiModelInput): Promise<AiModel> {
    const model = em.create(AiModel, {
      id: this.ids.next(),
      owner: em.getReference(User, ownerId),
      name: input.name,
      desc: input.desc ?? null,
      service: input.service,
      type: 'chat',
      conf: this.prepareConf(input.service, input.conf, null),
    } as AiModel);
    await em.flush();
    return model;
  }

  async update(em: EntityManager, ownerId: string, id: string, input: AiModelInput): Promise<AiModel> {
    const model = await this.get(em, ownerId, id);
    const conf = this.prepareConf(input.service, input.conf, model.conf);
    model.name = input.name;
    model.desc = input.desc ?? null;
    model.service = input.service;
    model.conf = conf;
    await em.flush();
    return model;
  }

  async remove(em: EntityManager, ownerId: string, id: string): Promise<void> {
    const deleted = isUuid(id) ? await em.nativeDelete(AiModel, { id, owner: ownerId }) : 0;
    if (deleted === 0) throw modelNotFound(id);
  }

  /**
   * Re-encrypts every secret sealed under an old key with the current one, and encrypts secrets
   * stored in plain text (written before encryption existed, or straight into the database).
   * Returns how many models changed.
   */
  /**
   * The stored secrets the configured keys cannot open (a key that is missing, or one that is not
   * the key that wrote them: a lost `ai.encryption.key` or secrets file). `clear` removes them from
   * their models' conf, so the models work again once their keys are entered anew.
   */
  async unreadableSecrets(em: EntityManager, options: { clear?: boolean } = {}): Promise<{ checked: number; unreadable: Array<{ id: string; name: string; key: string; keyId: string | null }> }> {
    let checked = 0;
    const unreadable: Array<{ id: string; name: string; key: string; keyId: string | null }> = [];
    const batch = 200;
    for (let offset = 0; ; offset += batch) {
      const models = await em.find(AiModel, {}, { orderBy: { id: 'asc' }, limit: batch, offset });
      for (const model of models) {
        const conf = { ...model.conf };
        let dirty = false;
        for (const [key, value] of Object.entries(conf)) {
          if (!isSealed(value)) continue;
          checked++;
          try {
            this.box.open(value);
          } catch (error) {
            if (!(error instanceof TrellisError)) throw error;
            unreadable.push({ id: model.id, name: model.name, key, keyId: SecretBox.keyIdOf(value) });
            if (options.clear) {
              delete conf[key];
              dirty = true;
            }
          }
        }
        if (dirty) model.conf = conf;
      }
      if (options.clear) await em.flush();
      if (models.length < batch) return { checked, unreadable };
    }
  }

  async reseal(em: EntityManager): Promise<number> {
    let changed = 0;
    const batch = 200;
    for (let offset = 0; ; offset += batch) {
      const models = await em.find(AiModel, {}, { orderBy: { id: 'asc' }, limit: batch, offset });
      for (const model of models) {
        const conf = this.resealConf(model.conf, this.secretKeys(model.service));
        if (conf) {
          model.conf = conf;
          changed++;
        }
      }
      await em.flush();
      if (models.length < batch) return changed;
    }
  }

  /**
   * `conf` with every value sealed under an old key sealed again with the current one and every
   * plain secret sealed (rows written before encryption covered it); `null` when nothing changed.
   */
  resealConf(conf: Record<string, unknown>, topKeys: readonly string[] = []): Record<string, unknown> | null {
    let dirty = false;
    const out = mapSecrets(
      conf,
      (value) => {
        if (isSealed(value)) {
          if (SecretBox.keyIdOf(value) === this.box.keyId) return value;
          dirty = true;
          return this.box.seal(this.box.open(value));
        }
        if (value === undefined || value === null || value === '') return value;
        dirty = true;
        return this.box.seal(value);
      },
      topKeys,
    );
    return dirty ? out : null;
  }
}
