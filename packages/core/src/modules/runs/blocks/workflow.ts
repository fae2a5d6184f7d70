import type { ValidationIssue } from '../../../kernel/errors.js';
import type { RichNode } from '../../documents/content/rich-text.js';

/** What a top-level block does in a run. `text` blocks are not executed but can be referenced. */
export type BlockKind = 'input' | 'llm' | 'code' | 'tool' | 'ask' | 'output' | 'retrieval' | 'text';

/** Node types of the executable blocks (see docs/runs.md). */
export const blockNodeTypes = {
  input: 'inputBlock',
  llm: 'llmBlock',
  code: 'codeBlock',
  tool: 'toolBlock',
  ask: 'askBlock',
  output: 'outputBlock',
  retrieval: 'retrievalBlock',
} as const;

const kindByNodeType: Record<string, BlockKind> = {
  inputBlock: 'input',
  llmBlock: 'llm',
  toolBlock: 'tool',
  askBlock: 'ask',
  outputBlock: 'output',
  retrievalBlock: 'retrieval',
};

export const inputTypes = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
export type InputType = (typeof inputTypes)[number];

export interface WorkflowBlock {
  index: number;
  id: string;
  /** The name other blocks use to reference this one: `attrs.name`, else `attrs.id`. */
  name: string;
  /** The node type as written (`llmBlock`, `paragraph`, ...): the event's `blockType`. */
  type: string;
  kind: BlockKind;
  attrs: Record<string, unknown>;
  /** The node's text (child text joined, blocks separated by new lines). */
  text: string;
  onError?: 'stop' | 'continue';
}

export interface InputDefinition {
  name: string;
  /** `any`: not checked (a deployment's input of a type the runtime does not know). */
  type: InputType | 'any';
  required: boolean;
  default?: unknown;
  description?: string;
}

/** The text of a node: text children joined, block children separated by new lines. */
export function nodeText(node: RichNode): string {
  if (node.type === 'text') return node.text ?? '';
  if (node.type === 'hardBreak') return '\n';
  if (!node.content) return '';
  const inline = node.content.every((child) => child.type === 'text' || child.type === 'hardBreak');
  return node.content.map(nodeText).join(inline ? '' : '\n');
}

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/**
 * The workflow of a document: its top-level blocks in order, classified, with their checks.
 * Throws 400 `invalid_workflow` (with one detail per problem) when a block cannot run.
 */
export function parseWorkflow(content: unknown, fail: (details: ValidationIssue[]) => Error): WorkflowBlock[] {
  const nodes = ((content as { content?: RichNode[] } | null)?.content ?? []) as RichNode[];
  const issues: ValidationIssue[] = [];
  const names = new Map<string, number>();
  const blocks = nodes.map((node, index): WorkflowBlock => {
    const attrs = (node.attrs ?? {}) as Record<string, unknown>;
    const id = typeof attrs.id === 'string' && attrs.id ? attrs.id : `block-${index}`;
    const name = typeof attrs.name === 'string' && attrs.name ? attrs.name : id;
    let kind: BlockKind = kindByNodeType[node.type] ?? 'text';
    if (node.type === 'codeBlock') {
      const language = typeof attrs.language === 'string' ? attrs.language.toLowerCase() : '';
      kind = language === 'javascript' || language === 'js' ? 'code' : 'text';
    }
    const at = `content.${index}`;
    const block: WorkflowBlock = { index, id, name, type: node.type, kind, attrs, text: nodeText(node) };
    if (attrs.onError !== undefined) {
      if (attrs.onError === 'stop' || attrs.onError === 'continue') block.onError = attrs.onError;
      else issues.push({ field: `${at}.attrs.onError`, constraint: 'isIn', message: 'must be stop or continue' });
    }
    if (kind !== 'text') {
      if (!NAME.test(name)) issues.push({ field: `${at}.attrs.name`, constraint: 'pattern', message: 'a block name is a letter or _ then letters, digits, _ or - (at most 64)' });
      const seen = names.get(name);
      if (seen !== undefined) issues.push({ field: `${at}.attrs.name`, constraint: 'unique', message: `the name "${name}" is already used by block ${seen}` });
      names.set(name, index);
    }
    checkBlock(block, at, issues);
    return block;
  });
  if (issues.length) throw fail(issues);
  return blocks;
}

function checkBlock(block: WorkflowBlock, at: string, issues: ValidationIssue[]): void {
  const a = block.attrs;
  const need = (key: string, ok: boolean, message: string) => {
    if (!ok) issues.push({ field: `${at}.attrs.${key}`, constraint: 'required', message });
  };
  switch (block.kind) {
    case 'input':
      need('name', typeof a.name === 'string' && a.name.length > 0, 'an input block needs a name');
      if (a.type !== undefined && !(inputTypes as readonly string[]).includes(a.type as string)) {
        issues.push({ field: `${at}.attrs.type`, constraint: 'isIn', message: `must be one of ${inputTypes.join(', ')}` });
      }
      if (a.required !== undefined && typeof a.required !== 'boolean') issues.push({ field: `${at}.attrs.required`, constraint: 'isBoolean', message: 'must be a boolean' });
      break;
    case 'llm':
      need('model', typeof a.model === 'string' && a.model.length > 0, 'an LLM block needs a model id');
      need('prompt', (typeof a.prompt === 'string' && a.prompt.length > 0) || block.text.length > 0, 'an LLM block needs a prompt (attrs.prompt or its text)');
      if (a.tools !== undefined && !(Array.isArray(a.tools) && a.tools.every((t) => typeof t === 'string'))) {
        issues.push({ field: `${at}.attrs.tools`, constraint: 'isArray', message: 'must be an array of AI tool ids' });
      }
      break;
    case 'tool':
      need('tool', typeof a.tool === 'string' && a.tool.length > 0, 'a tool block needs an AI tool id');
      need('action', typeof a.action === 'string' && a.action.length > 0, 'a tool block needs the action (function) name');
      if (a.args !== undefined && (typeof a.args !== 'object' || a.args === null || Array.isArray(a.args))) {
        issues.push({ field: `${at}.attrs.args`, constraint: 'isObject', message: 'must be an object' });
      }
      break;
    case 'retrieval':
      need('knowledgeBase', typeof a.knowledgeBase === 'string' && a.knowledgeBase.length > 0, 'a retrieval block needs a knowledge base id');
      need('query', (typeof a.query === 'string' && a.query.length > 0) || block.text.length > 0, 'a retrieval block needs a query (attrs.query or its text)');
      break;
    case 'ask':
      need('question', (typeof a.question === 'string' && a.question.length > 0) || block.text.length > 0, 'an ask block needs a question (attrs.question or its text)');
      break;
    default:
      break;
  }
}

/** The input definitions of a workflow, in order (the spec's Input Block schema). */
export function inputDefinitions(blocks: readonly WorkflowBlock[]): InputDefinition[] {
  return blocks
    .filter((b) => b.kind === 'input')
    .map((b) => ({
      name: b.name,
      type: (b.attrs.type as InputType | undefined) ?? 'string',
      required: b.attrs.required === true,
      ...(b.attrs.default !== undefined ? { default: b.attrs.default } : {}),
      ...(typeof b.attrs.description === 'string' ? { description: b.attrs.description } : {}),
    }));
}

/** Checks `inputs` against the definitions and returns them with defaults applied. */
export function validateInputs(definitions: readonly InputDefinition[], inputs: Record<string, unknown>): { values: Record<string, unknown>; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const values: Record<string, unknown> = {};
  const known = new Set(definitions.map((d) => d.name));
  for (const key of Object.keys(inputs)) {
    if (!known.has(key)) issues.push({ field: `inputs.${key}`, constraint: 'unknown', message: `no input block is named "${key}"` });
  }
  for (const def of definitions) {
    const value = inputs[def.name];
    if (value === undefined || value === null) {
      if (def.default !== undefined) values[def.name] = def.default;
      else if (def.required) issues.push({ field: `inputs.${def.name}`, constraint: 'required', message: `is required${def.description ? ` (${def.description})` : ''}` });
      else values[def.name] = null;
      continue;
    }
    if (!matchesType(def.type, value)) {
      issues.push({ field: `inputs.${def.name}`, constraint: `is${def.type[0]!.toUpperCase()}${def.type.slice(1)}`, message: `must be ${article(def.type)} ${def.type}` });
      continue;
    }
    values[def.name] = value;
  }
  return { values, issues };
}

function matchesType(type: InputType | 'any', value: unknown): boolean {
  switch (type) {
    case 'any':
      return true;
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && !Array.isArray(value);
  }
}

const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');
