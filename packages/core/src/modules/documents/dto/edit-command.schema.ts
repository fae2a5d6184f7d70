import { commandOps } from '../content/edit-commands.js';

/**
 * JSON Schema of one edit command: one schema per `op` (oneOf on `op`), with exactly the fields
 * that op takes (`content/edit-commands.ts` refuses any other). Shared by the edit and smart-edit
 * bodies, so the published contract and the interpreter name the same fields.
 */
const blockId = { type: 'string', minLength: 1, description: 'Id of a top-level block (`attrs.id`).' };
const block = { type: 'object', required: ['type'], properties: { type: { type: 'string' } }, description: 'One rich-text block node, with a unique `attrs.id`.' };
const after = { anyOf: [{ type: 'string', minLength: 1 }, { type: 'null' }], description: 'Id of the block to follow; null for the start; absent for the end.' };

const command = (op: string, description: string, properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: 'object',
  title: op,
  description,
  required: ['op', ...required],
  properties: { op: { const: op }, ...properties },
  additionalProperties: false,
});

const byOp: Record<(typeof commandOps)[number], Record<string, unknown>> = {
  list: command('list', 'The top-level blocks: id, type, name and index of each.'),
  read: command('read', 'One block as JSON.', { blockId }, ['blockId']),
  read_range: command('read_range', 'The blocks from one id to another, inclusive.', { from: blockId, to: blockId }, ['from', 'to']),
  write: command(
    'write',
    "Replaces a block's inline content.",
    { blockId, content: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }], description: 'Inline nodes, or plain text.' } },
    ['blockId', 'content'],
  ),
  insert: command('insert', 'Inserts a block.', { block, after }, ['block']),
  delete: command('delete', 'Deletes a block.', { blockId }, ['blockId']),
  replace: command('replace', 'Replaces a block with another.', { blockId, block }, ['blockId', 'block']),
  move: command('move', 'Moves a block.', { blockId, after }, ['blockId']),
  str_replace: command(
    'str_replace',
    "Replaces one exact occurrence of a text in a block's text.",
    { blockId, old_str: { type: 'string', minLength: 1 }, new_str: { type: 'string' } },
    ['blockId', 'old_str', 'new_str'],
  ),
};

export const editCommandSchema = { oneOf: commandOps.map((op) => byOp[op]) };

export const editCommandsSchema = { type: 'array', minItems: 1, items: editCommandSchema };
