import type { ValidationIssue } from '../../../kernel/errors.js';
import type { RichNode } from '../../documents/content/rich-text.js';
import { askKind } from './kinds/ask.js';
import { codeKind } from './kinds/code.js';
import { builtinBlockKindRegistry } from './kinds/index.js';
import { inputKind, inputTypes, type InputAttrs, type InputType } from './kinds/input.js';
import { llmKind } from './kinds/llm.js';
import { outputKind } from './kinds/output.js';
import { toolKind } from './kinds/tool.js';
import type { BlockKinds } from './registry.js';

/**
 * What a top-level block does in a run: a registered kind's name, or `text` (not executed, but
 * referenceable). The built-in kinds are named here; a package may register others.
 */
export type BuiltinBlockKind = 'input' | 'llm' | 'code' | 'tool' | 'ask' | 'output' | 'text';
export type BlockKind = BuiltinBlockKind | (string & {});

/** Node types of the built-in executable blocks (see docs/runs.md), from their kind declarations. */
export const blockNodeTypes = {
  input: inputKind.nodeType,
  llm: llmKind.nodeType,
  code: codeKind.nodeType,
  tool: toolKind.nodeType,
  ask: askKind.nodeType,
  output: outputKind.nodeType,
} as const;

export { inputTypes, type InputType };

/** A top-level block of a workflow; `A` is its attrs' type once checked against its kind's schema. */
export interface WorkflowBlock<A = Record<string, unknown>> {
  index: number;
  id: string;
  /** The name other blocks use to reference this one: `attrs.name`, else `attrs.id`. */
  name: string;
  /** The node type as written (`llmBlock`, `paragraph`, ...): the event's `blockType`. */
  type: string;
  kind: BlockKind;
  /** From the kind's declaration: no checkpoint is needed between two replayable blocks (see run-engine.ts). */
  replayable: boolean;
  attrs: A;
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
 * The workflow of a document: its top-level blocks in order, classified by the registered kinds
 * (`kinds`: the deployment's; the built-in ones by default), with their checks. Throws 400
 * `invalid_workflow` (with one detail per problem) when a block cannot run.
 */
export function parseWorkflow(content: unknown, fail: (details: ValidationIssue[]) => Error, kinds: BlockKinds = builtinBlockKindRegistry): WorkflowBlock[] {
  const nodes = ((content as { content?: RichNode[] } | null)?.content ?? []) as RichNode[];
  const issues: ValidationIssue[] = [];
  const names = new Map<string, number>();
  const blocks = nodes.map((node, index): WorkflowBlock => {
    const attrs = (node.attrs ?? {}) as Record<string, unknown>;
    const id = typeof attrs.id === 'string' && attrs.id ? attrs.id : `block-${index}`;
    const name = typeof attrs.name === 'string' && attrs.name ? attrs.name : id;
    const definition = kinds.classify(node.type, attrs);
    const kind: BlockKind = definition?.kind ?? 'text';
    const at = `content.${index}`;
    const block: WorkflowBlock = { index, id, name, type: node.type, kind, replayable: definition?.replayable ?? false, attrs, text: nodeText(node) };
    if (attrs.onError !== undefined) {
      if (attrs.onError === 'stop' || attrs.onError === 'continue') block.onError = attrs.onError;
      else issues.push({ field: `${at}.attrs.onError`, constraint: 'isIn', message: 'must be stop or continue' });
    }
    if (definition) {
      if (!NAME.test(name)) issues.push({ field: `${at}.attrs.name`, constraint: 'pattern', message: 'a block name is a letter or _ then letters, digits, _ or - (at most 64)' });
      const seen = names.get(name);
      if (seen !== undefined) issues.push({ field: `${at}.attrs.name`, constraint: 'unique', message: `the name "${name}" is already used by block ${seen}` });
      names.set(name, index);
      for (const issue of kinds.check(kind, attrs, block.text)) {
        issues.push({ ...issue, field: issue.field ? `${at}.attrs.${issue.field}` : `${at}.attrs` });
      }
    }
    return block;
  });
  if (issues.length) throw fail(issues);
  return blocks;
}

/** The input definitions of a workflow, in order (the spec's Input Block schema). */
export function inputDefinitions(blocks: readonly WorkflowBlock[]): InputDefinition[] {
  return blocks
    .filter((b) => b.kind === 'input')
    .map((b) => ({
      name: b.name,
      type: (b.attrs as InputAttrs).type ?? 'string',
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
