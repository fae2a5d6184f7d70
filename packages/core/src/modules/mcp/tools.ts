import type { EntityManager } from '@mikro-orm/core';
import type { Block } from '../blocks/entities/block.entity.js';
import { DeploymentService } from '../blocks/services/deployment.service.js';
import type { CompatCaller } from '../openai-compat/caller.js';
import { callableBlocks } from '../openai-compat/models.js';
import type { InputDefinition } from '../runs/blocks/workflow.js';
import { RunService } from '../runs/services/run.service.js';
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

/** A JSON Schema of the run's inputs: the deployment's input definitions, else its input blocks. */
function inputSchemaOf(inputs: readonly InputDefinition[]): OfferedTool['inputSchema'] {
  const properties: Record<string, Record<string, unknown>> = {};
  for (const input of inputs) {
    properties[input.name] = {
      ...(input.type === 'any' ? {} : { type: input.type }),
      ...(input.description ? { description: input.description } : {}),
      ...(input.default !== undefined ? { default: input.default } : {}),
    };
  }
  const required = inputs.filter((i) => i.required && i.default === undefined).map((i) => i.name);
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

/**
 * The deployed blocks offered to this caller as MCP tools: those that opted in (`PUT
 * /block/:bid/mcp`) among the ones it may run. Names are the blocks' names made safe, with the
 * start of the id added where two would collide.
 */
export async function offeredTools(em: EntityManager, get: Get, caller: CompatCaller): Promise<OfferedTool[]> {
  const enabled = (await em.find(McpTool, {}, { fields: ['block'] } as never)).map((row) => row.block.id);
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

async function inputsOf(em: EntityManager, deployments: DeploymentService, runs: RunService, block: Block): Promise<OfferedTool['inputSchema']> {
  if (block.inputs?.length) {
    return inputSchemaOf(block.inputs.map((i) => ({ name: i.name, type: (['string', 'number', 'integer', 'boolean', 'object', 'array'].includes(i.type) ? i.type : 'any') as InputDefinition['type'], required: i.required, default: i.default, description: i.description })));
  }
  const version = await deployments.version(em, block);
  try {
    return inputSchemaOf(runs.inputsOf(version.content));
  } catch {
    return { type: 'object', properties: {} };
  }
}
