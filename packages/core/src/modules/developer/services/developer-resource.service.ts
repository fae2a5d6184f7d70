import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { User } from '../../identity/index.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { DeviceTokenService } from './device-token.service.js';
import { AiModelService, type AiModel, type AiTool, AiToolService } from '../../ai/index.js';
import { devResources, type DevInput, type DevResourceType, type OwnedEntity } from '../resource-types.js';

/**
 * Create, read, update, delete and list for every developer resource type, always within one
 * owner: another developer's resource is answered like a missing one (404), never 403, so ids of
 * others' resources cannot be probed.
 */
@injectable()
export class DeveloperResourceService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(DeviceTokenService) private readonly deviceTokens: DeviceTokenService,
    @inject(AiModelService) private readonly models: AiModelService,
    @inject(AiToolService) private readonly tools: AiToolService,
  ) {}

  async list(em: EntityManager, type: DevResourceType, ownerId: string, page: Paging): Promise<{ items: OwnedEntity[]; total: number }> {
    const d = devResources[type];
    const [items, total] = await em.findAndCount(d.entity, { owner: ownerId } as FilterQuery<OwnedEntity>, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
    });
    return { items, total };
  }

  async get(em: EntityManager, type: DevResourceType, ownerId: string, id: string): Promise<OwnedEntity> {
    const d = devResources[type];
    const entity = await em.findOne(d.entity, { id, owner: ownerId } as FilterQuery<OwnedEntity>);
    if (!entity) throw new TrellisError('not_found', d.notFound, `No ${d.label} of yours has the id ${id}.`);
    return entity;
  }

  async create(em: EntityManager, type: DevResourceType, ownerId: string, input: DevInput): Promise<OwnedEntity> {
    const d = devResources[type];
    const entity = em.create(d.entity, {
      id: this.ids.next(),
      owner: em.getReference(User, ownerId),
      ...d.build(input, ownerId),
    } as never);
    // AI model secrets are encrypted before they reach the database, whichever API writes them.
    if (type === 'model') this.sealModel(entity as unknown as AiModel, null);
    if (type === 'tool') this.sealTool(entity as unknown as AiTool, null);
    await em.flush();
    return entity;
  }

  async update(em: EntityManager, type: DevResourceType, ownerId: string, id: string, input: DevInput): Promise<OwnedEntity> {
    const entity = await this.get(em, type, ownerId, id);
    const previousConf = type === 'model' ? (entity as unknown as AiModel).conf : null;
    const previousTool = type === 'tool' ? { conf: (entity as unknown as AiTool).conf, actions: (entity as unknown as AiTool).actions } : null;
    devResources[type].apply(entity, input);
    if (type === 'model' && input.config !== undefined) this.sealModel(entity as unknown as AiModel, previousConf);
    if (type === 'tool') this.sealTool(entity as unknown as AiTool, previousTool);
    await em.flush();
    return entity;
  }

  private sealModel(model: AiModel, previous: Record<string, unknown> | null): void {
    model.conf = this.models.prepareConf(model.service, model.conf, previous);
  }

  /** Tool secrets (header values, secret-looking keys) are encrypted like model secrets. */
  private sealTool(tool: AiTool, previous: Pick<AiTool, 'conf' | 'actions'> | null): void {
    const sealed = this.tools.seal(tool.conf ?? {}, tool.actions ?? [], previous);
    tool.conf = sealed.conf;
    tool.actions = sealed.actions;
  }

  async remove(em: EntityManager, type: DevResourceType, ownerId: string, id: string): Promise<void> {
    const d = devResources[type];
    // One conditional statement: a concurrent second delete finds nothing and answers 404.
    const deleted = await em.nativeDelete(d.entity, { id, owner: ownerId } as FilterQuery<OwnedEntity>);
    if (deleted === 0) throw new TrellisError('not_found', d.notFound, `No ${d.label} of yours has the id ${id}.`);
    // A deleted device's token must be refused at once, not when the principal cache expires.
    if (type === 'hardware' || type === 'app') await this.deviceTokens.forget(ownerId, id);
  }
}
