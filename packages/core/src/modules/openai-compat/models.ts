import type { EntityManager } from '@mikro-orm/core';
import { sha256Hex } from '../../kernel/crypto.js';
import { Block, DeploymentService } from '../blocks/index.js';
import { Bot } from '../bots/index.js';
import { TeamMember } from '../identity/index.js';
import type { CompatCaller } from './caller.js';
import type { ModelEntry } from './schemas.js';

type Get = <T>(id: new (...args: any[]) => T) => T;

/** Most bots and deployed blocks one list shows. */
const LIST_LIMIT = 200;

const seconds = (date: Date | null | undefined) => Math.floor((date ?? new Date(0)).getTime() / 1000);

const blockEntry = (block: Block): ModelEntry => ({
  id: `block:${block.id}`,
  object: 'model',
  created: seconds(block.deployedAt),
  owned_by: block.project.id,
  name: block.name,
  ...(block.description ? { description: block.description } : {}),
});

/**
 * What the caller may name as `model`: a user's bots (`bot:<id>`) and the deployed blocks of the
 * projects it owns or shares a team with that it may call (`block:<id>`); a deployment token's
 * own deployment.
 */
export async function listModels(em: EntityManager, get: Get, caller: CompatCaller): Promise<ModelEntry[]> {
  if (!caller.principal) return (await callableBlocks(em, get, caller)).map(blockEntry);
  const userId = caller.principal.userId;
  const bots = await em.find(Bot, { owner: userId }, { orderBy: { createdAt: 'asc', id: 'asc' }, limit: LIST_LIMIT });
  const blocks = await callableBlocks(em, get, caller);
  return [...bots.map((bot): ModelEntry => ({ id: `bot:${bot.id}`, object: 'model', created: seconds(bot.createdAt), owned_by: userId, name: bot.name })), ...blocks.map(blockEntry)];
}

/**
 * The deployed blocks a caller may run: a deployment token's own (access `token`), or those of the
 * projects a user owns or shares a team with that `DeploymentService.authorize` admits, oldest
 * first, at most `LIST_LIMIT`. `only` narrows the search to these block ids.
 */
export async function callableBlocks(em: EntityManager, get: Get, caller: CompatCaller, only?: readonly string[]): Promise<Block[]> {
  const restrict = only ? { id: { $in: [...only] } } : {};
  if (!caller.principal) {
    const hash = caller.deploymentToken ? sha256Hex(caller.deploymentToken) : null;
    const block = hash ? await em.findOne(Block, { ...restrict, deploymentTokenHash: hash, access: 'token', trashedAt: null, latestVersion: { $ne: null } }, { populate: ['project'] }) : null;
    return block ? [block] : [];
  }
  const userId = caller.principal.userId;
  const teams = (await em.find(TeamMember, { user: userId }, { fields: ['team'] } as never)).map((m) => m.team.id);
  const candidates = await em.find(
    Block,
    { ...restrict, latestVersion: { $ne: null }, trashedAt: null, project: { $or: [{ owner: userId }, ...(teams.length ? [{ team: { $in: teams } }] : [])] } },
    { populate: ['project'], orderBy: { createdAt: 'asc', id: 'asc' }, limit: LIST_LIMIT },
  );
  const deployments = get(DeploymentService);
  const blocks: Block[] = [];
  for (const block of candidates) {
    try {
      await deployments.authorize(em, caller, block.id);
      blocks.push(block);
    } catch {
      /* not callable by this user */
    }
  }
  return blocks;
}
