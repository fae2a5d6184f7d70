import type { EntityManager } from '@mikro-orm/core';
import { sha256Hex } from '../../kernel/crypto.js';
import { Block, DeploymentService } from '../blocks/index.js';
import { TeamMember } from '../identity/index.js';
import { type CompatCaller, callableBlocks } from '../openai-compat/index.js';
import { deploymentInputDefinitions, inputsSchema, RunService } from '../runs/index.js';
import { McpTool } from './entities/mcp-tool.entity.js';

type Get = <T>(id: new (...args: any[]) => T) => T;

export interface OfferedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, Record<string, unknown>>; required?: string[] };
  blockId: string;
}

/** An MCP tool name for a block: its name in `[a-z0-9_-]`, at most 48 characters. */
const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 48) || 'block';

/**
 * The deployed blocks offered to this caller as MCP tools: those that opted in (`PUT
 * /block/:bid/mcp`) among the ones it may run. Names are the blocks' names made safe, with the
 * start of the id added where two would collide.
 */
export async function offeredTools(em: EntityManager, get: Get, caller: CompatCaller): Promise<OfferedTool[]> {
  const enabled = await optedIn(em, caller);
  if (!enabled.length) return [];
  const blocks = await callableBlocks(em, get, caller, enabled);
  const deployments = get(DeploymentService);
  const runs = get(RunService);
  const taken = new Set<string>();
  const tools: OfferedTool[] = [];
  for (const block of blocks) {
    let name = slug(block.name);
    if (taken.has(name)) name = `${name}_${block.id.slice(0, 8)}`;
    taken.add(name);
    tools.push({ name, title: block.name, description: block.description || `Runs the deployed block "${block.name}".`, inputSchema: await inputsOf(em, deployments, runs, block), blockId: block.id });
  }
  return tools;
}

/** Most tools one caller is offered. */
const TOOL_LIMIT = 200;

/** Ids of the opted-in blocks that may concern the caller: in projects it owns or shares a team with, or its token's. */
async function optedIn(em: EntityManager, caller: CompatCaller): Promise<string[]> {
  if (!caller.principal) {
    const own = caller.deploymentToken ? await em.findOne(Block, { deploymentTokenHash: sha256Hex(caller.deploymentToken) }, { fields: ['id'] } as never) : null;
    return own && (await em.count(McpTool, { block: own.id })) ? [own.id] : [];
  }
  const userId = caller.principal.userId;
  const teams = (await em.find(TeamMember, { user: userId }, { fields: ['team'] } as never)).map((m) => m.team.id);
  const projects = { $or: [{ owner: userId }, ...(teams.length ? [{ team: { $in: teams } }] : [])] };
  const rows = await em.find(McpTool, { block: { trashedAt: null, project: projects } }, { fields: ['block'], orderBy: { createdAt: 'asc' }, limit: TOOL_LIMIT } as never);
  return rows.map((row) => row.block.id);
}

async function inputsOf(em: EntityManager, deployments: DeploymentService, runs: RunService, block: Block): Promise<OfferedTool['inputSchema']> {
  const declared = deploymentInputDefinitions(block.inputs);
  if (declared) return inputsSchema(declared);
  const version = await deployments.version(em, block);
  try {
    return inputsSchema(runs.inputsOf(version.content));
  } catch {
    return { type: 'object', properties: {} };
  }
}
