import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError, type ValidationIssue } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { AiModel, AiTool } from '../../ai/index.js';
import { User } from '../../identity/index.js';
import { Bot, type BotConf } from '../entities/bot.entity.js';
import { isUuid } from '../../../kernel/crypto.js';

export const botNotFound = (id: string) => new TrellisError('not_found', 'bot_not_found', `No bot of yours has the id ${id}.`);

/** Bots of one owner. `conf.modelId` and `conf.toolIds` must name AI models and tools the owner may use. */
@injectable()
export class BotService {
  constructor(@inject(idsServiceIdentifier) private readonly ids: Ids) {}

  /** 400 `invalid_bot_conf` when conf names models or tools the owner cannot use. */
  async checkConf(em: EntityManager, ownerId: string, conf: Record<string, unknown>): Promise<BotConf> {
    const issues: ValidationIssue[] = [];
    const text = (key: string) => {
      if (conf[key] !== undefined && typeof conf[key] !== 'string') issues.push({ field: `conf.${key}`, constraint: 'isString', message: `conf.${key} is text.` });
    };
    text('avatar');
    text('desc');
    text('prompt');
    const modelId = conf.modelId;
    if (modelId !== undefined && modelId !== null) {
      if (typeof modelId !== 'string' || !isUuid(modelId) || !(await em.count(AiModel, { id: modelId, owner: ownerId }))) {
        issues.push({ field: 'conf.modelId', constraint: 'usableModel', message: 'conf.modelId names no AI model of yours.' });
      }
    }
    const toolIds = conf.toolIds;
    if (toolIds !== undefined && toolIds !== null) {
      if (!Array.isArray(toolIds) || toolIds.length > 64 || toolIds.some((id) => typeof id !== 'string' || !isUuid(id))) {
        issues.push({ field: 'conf.toolIds', constraint: 'isArray', message: 'conf.toolIds is a list of at most 64 AI tool ids.' });
      } else {
        const unique = [...new Set(toolIds as string[])];
        const found = unique.length ? await em.count(AiTool, { id: { $in: unique }, owner: ownerId }) : 0;
        if (found !== unique.length) issues.push({ field: 'conf.toolIds', constraint: 'usableTools', message: 'conf.toolIds names AI tools that are not yours.' });
      }
    }
    if (issues.length) throw new TrellisError('bad_request', 'invalid_bot_conf', 'The bot conf names something you cannot use.', { details: issues });
    return { ...conf } as BotConf;
  }

  async list(em: EntityManager, ownerId: string, page: Paging): Promise<{ items: Bot[]; total: number }> {
    const [items, total] = await em.findAndCount(Bot, { owner: ownerId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async get(em: EntityManager, ownerId: string, id: string): Promise<Bot> {
    const bot = isUuid(id) ? await em.findOne(Bot, { id, owner: ownerId }) : null;
    if (!bot) throw botNotFound(id);
    return bot;
  }

  async create(em: EntityManager, ownerId: string, input: { name: string; conf: Record<string, unknown> }): Promise<Bot> {
    const conf = await this.checkConf(em, ownerId, input.conf);
    const bot = em.create(Bot, { id: this.ids.next(), owner: em.getReference(User, ownerId), name: input.name, conf } as Bot);
    await em.flush();
    return bot;
  }

  async update(em: EntityManager, ownerId: string, id: string, input: { name?: string; conf?: Record<string, unknown> }): Promise<Bot> {
    const bot = await this.get(em, ownerId, id);
    if (input.conf !== undefined) bot.conf = await this.checkConf(em, ownerId, input.conf);
    if (input.name !== undefined) bot.name = input.name;
    await em.flush();
    return bot;
  }

  /** Deletes the bot; its conversations and their messages go with it (foreign keys cascade). */
  async remove(em: EntityManager, ownerId: string, id: string): Promise<void> {
    const deleted = isUuid(id) ? await em.nativeDelete(Bot, { id, owner: ownerId }) : 0;
    if (deleted === 0) throw botNotFound(id);
  }
}
