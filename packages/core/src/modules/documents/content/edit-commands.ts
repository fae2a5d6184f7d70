import { blockId, blockName, ContentError, normalizeNode, normalizeNodes, type DocumentContent, type JsonValue, type RichNode } from './rich-text.js';

/** The block commands of `POST /documents/:id/edit` (and smart-edit, collab edit). */
export const commandOps = ['list', 'read', 'read_range', 'write', 'insert', 'delete', 'replace', 'move', 'str_replace'] as const;
export type CommandOp = (typeof commandOps)[number];

export interface CommandResult {
  op: string;
  success: true;
  data?: JsonValue | RichNode | RichNode[] | Array<{ id: string; type: string; name: string | null; index: number }>;
}

/** Why a command failed; the whole edit is refused and nothing is saved. */
export class CommandError extends Error {
  constructor(
    readonly index: number,
    readonly op: string,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CommandOutcome {
  doc: DocumentContent;
  results: CommandResult[];
  /** Whether any command changed the document. */
  changed: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Applies commands in order to a copy of `doc`. All or nothing: the first failing command
 * throws a `CommandError` naming its position and the reason, and `doc` is never modified.
 * `newId` gives ids to inserted blocks that have none. The copy is made on write: blocks no
 * command changes are the very objects of `doc` (so a 1 MB document is not cloned for a one-block
 * edit, and `prepareEditedDocument` knows what it need not check again).
 */
export function applyCommands(doc: DocumentContent, commands: readonly unknown[], newId: () => string): CommandOutcome {
  const blocks: RichNode[] = [...(doc.content ?? [])];
  const results: CommandResult[] = [];
  let changed = false;
  commands.forEach((raw, index) => {
    const op = isObject(raw) && typeof raw.op === 'string' ? raw.op : '';
    const fail = (reason: string, message: string): never => {
      throw new CommandError(index, op || String((raw as { op?: unknown })?.op ?? ''), reason, message);
    };
    if (!isObject(raw)) fail('invalid_command', 'a command must be a JSON object with an "op"');
    const command = raw as Record<string, unknown>;
    if (!(commandOps as readonly string[]).includes(op)) fail('unknown_op', `unknown op "${String(command.op)}" (one of ${commandOps.join(', ')})`);
    const allowed: Record<CommandOp, string[]> = {
      list: [],
      read: ['blockId'],
      read_range: ['from', 'to'],
      write: ['blockId', 'content'],
      insert: ['block', 'after'],
      delete: ['blockId'],
      replace: ['blockId', 'block'],
      move: ['blockId', 'after'],
      str_replace: ['blockId', 'old_str', 'new_str'],
    };
    for (const key of Object.keys(command)) {
      if (key !== 'op' && !allowed[op as CommandOp].includes(key)) fail('invalid_command', `"${op}" takes no "${key}" (it takes ${allowed[op as CommandOp].join(', ') || 'nothing'})`);
    }
    const str = (key: string): string => {
      const value = command[key];
      if (typeof value !== 'string' || value === '') fail('invalid_command', `"${key}" must be a non-empty string`);
      return value as string;
    };
    const find = (key: string): number => {
      const id = str(key);
      const at = blocks.findIndex((block) => blockId(block) === id);
      if (at < 0) fail('block_not_found', `no top-level block has the id "${id}"`);
      return at;
    };
    /** Index after which to place a block: -1 for the start (`after: null`), the end when absent. */
    const position = (movingId?: string): number => {
      if (!('after' in command) || command.after === undefined) return blocks.length - 1;
      if (command.after === null) return -1;
      const id = str('after');
      if (movingId !== undefined && id === movingId) fail('invalid_command', 'a block cannot be moved after itself');
      const at = blocks.findIndex((block) => blockId(block) === id);
      if (at < 0) fail('block_not_found', `no top-level block has the id "${id}"`);
      return at;
    };
    const block = (key: string, keepId?: string): RichNode => {
      let node: RichNode | null;
      try {
        node = normalizeNode(command[key], key);
      } catch (error) {
        return fail('invalid_block', error instanceof ContentError ? error.message : String(error));
      }
      if (!node || node.type === 'text') return fail('invalid_block', 'a top-level block must be a node other than text');
      const id = node.attrs?.id;
      if (id === undefined || id === null) node.attrs = { id: keepId ?? newId(), ...withoutId(node.attrs) };
      else if (typeof id !== 'string' || id === '' || id.length > 128) fail('invalid_block', 'attrs.id must be a non-empty string of at most 128 characters');
      if (node.attrs!.name !== undefined && typeof node.attrs!.name !== 'string') fail('invalid_block', 'attrs.name must be a string');
      return node;
    };
    const unique = (node: RichNode, except?: number) => {
      const id = blockId(node)!;
      if (blocks.some((other, i) => i !== except && blockId(other) === id)) fail('duplicate_block_id', `a block with the id "${id}" exists already`);
    };

    switch (op as CommandOp) {
      case 'list':
        results.push({ op, success: true, data: blocks.map((b, i) => ({ id: blockId(b) ?? '', type: b.type, name: blockName(b), index: i })) });
        return;
      case 'read':
        results.push({ op, success: true, data: structuredClone(blocks[find('blockId')]!) });
        return;
      case 'read_range': {
        const from = find('from');
        const to = find('to');
        if (from > to) fail('invalid_range', '"from" comes after "to" in the document');
        results.push({ op, success: true, data: structuredClone(blocks.slice(from, to + 1)) });
        return;
      }
      case 'write': {
        const at = find('blockId');
        if (!('content' in command)) fail('invalid_command', '"write" needs "content" (an array of nodes, or a string of text)');
        const value = command.content;
        let content: RichNode[];
        try {
          content = typeof value === 'string' ? normalizeNodes([{ type: 'text', text: value }], 'content') : normalizeNodes(value, 'content');
        } catch (error) {
          return fail('invalid_content', error instanceof ContentError ? error.message : String(error));
        }
        const target: RichNode = { ...blocks[at]! };
        if (content.length) target.content = content;
        else delete target.content;
        blocks[at] = target;
        changed = true;
        results.push({ op, success: true });
        return;
      }
      case 'insert': {
        const node = block('block');
        unique(node);
        const after = position();
        blocks.splice(after + 1, 0, node);
        changed = true;
        results.push({ op, success: true, data: { id: blockId(node)! } });
        return;
      }
      case 'delete':
        blocks.splice(find('blockId'), 1);
        changed = true;
        results.push({ op, success: true });
        return;
      case 'replace': {
        const at = find('blockId');
        const node = block('block', blockId(blocks[at]!));
        unique(node, at);
        blocks[at] = node;
        changed = true;
        results.push({ op, success: true });
        return;
      }
      case 'move': {
        const at = find('blockId');
        const moving = blocks[at]!;
        const after = position(blockId(moving));
        const anchor = after >= 0 ? blocks[after] : undefined;
        blocks.splice(at, 1);
        const insertAt = anchor ? blocks.indexOf(anchor) + 1 : after < 0 ? 0 : blocks.length;
        blocks.splice(insertAt, 0, moving);
        changed = true;
        results.push({ op, success: true });
        return;
      }
      case 'str_replace': {
        const at = find('blockId');
        const oldStr = str('old_str');
        if (typeof command.new_str !== 'string') fail('invalid_command', '"new_str" must be a string');
        const copy = structuredClone(blocks[at]!);
        const replaced = replaceText(copy, oldStr, command.new_str as string);
        if (replaced === 0) fail('no_match', `"old_str" does not occur in block "${blockId(copy)}"`);
        if (replaced > 1) fail('multiple_matches', `"old_str" occurs ${replaced} times in block "${blockId(copy)}"; include more context so it occurs once`);
        try {
          blocks[at] = normalizeNode(copy, 'block')!;
        } catch (error) {
          return fail('invalid_content', error instanceof ContentError ? error.message : String(error));
        }
        changed = true;
        results.push({ op, success: true });
        return;
      }
    }
  });
  const out: DocumentContent = blocks.length ? { type: 'doc', content: blocks } : { type: 'doc' };
  return { doc: out, results, changed };
}

function withoutId(attrs: RichNode['attrs']): Record<string, JsonValue> {
  const { id: _id, ...rest } = attrs ?? {};
  return rest;
}

/**
 * Replaces `oldStr` by `newStr` in the text of `block` when it occurs exactly once, searching each
 * run of consecutive text nodes (a match may cross marks, not inline nodes or blocks). The
 * replacement takes the marks of the text where the match starts. Returns the number of matches
 * found (the block is changed only when it is 1).
 */
function replaceText(block: RichNode, oldStr: string, newStr: string): number {
  const runs: RichNode[][] = [];
  const collect = (node: RichNode) => {
    if (!node.content) return;
    let run: RichNode[] = [];
    for (const child of node.content) {
      if (child.type === 'text') run.push(child);
      else {
        if (run.length) runs.push(run);
        run = [];
        collect(child);
      }
    }
    if (run.length) runs.push(run);
  };
  collect(block);
  let count = 0;
  let hit: { run: RichNode[]; start: number } | undefined;
  for (const run of runs) {
    const text = run.map((n) => n.text!).join('');
    for (let from = text.indexOf(oldStr); from >= 0; from = text.indexOf(oldStr, from + 1)) {
      count++;
      hit ??= { run, start: from };
    }
  }
  if (count !== 1 || !hit) return count;
  let offset = 0;
  let remaining = oldStr.length;
  let inserted = false;
  for (const node of hit.run) {
    const text = node.text!;
    const nodeStart = offset;
    offset += text.length;
    if (remaining === 0 || offset <= hit.start) continue;
    const cutFrom = Math.max(0, hit.start - nodeStart);
    const cutTo = Math.min(text.length, cutFrom + remaining);
    remaining -= cutTo - cutFrom;
    node.text = text.slice(0, cutFrom) + (inserted ? '' : newStr) + text.slice(cutTo);
    inserted = true;
  }
  return 1;
}
