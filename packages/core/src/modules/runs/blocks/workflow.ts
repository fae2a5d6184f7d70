import type { ValidationIssue } from '../../../kernel/errors.js';
import type { RichNode } from '../../documents/index.js';
import { failurePolicyIssues } from './failure-policy.js';
import { askKind } from './kinds/ask.js';
import { codeKind } from './kinds/code.js';
import { builtinBlockKindRegistry } from './kinds/index.js';
import { inputKind, inputTypes, type InputType } from './kinds/input.js';
import { llmKind } from './kinds/llm.js';
import { outputKind } from './kinds/output.js';
import { toolKind } from './kinds/tool.js';
import { parseControl } from './control/parse.js';
import { compileExpression, ExpressionError, type CompiledExpression } from './control/expression.js';
import { controlNodeTypes, topLevelOnlyKinds, type ControlKind } from './control/nodes.js';
import type { BlockKinds } from './registry.js';

/**
 * What a top-level block does in a run: a registered kind's name, or `text` (not executed, but
 * referenceable). The built-in kinds are named here; a package may register others.
 */
export type BuiltinBlockKind = 'input' | 'llm' | 'code' | 'tool' | 'ask' | 'output' | 'text' | ControlKind;
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
export { inputDefinitions, validateInputs, type InputDefinition } from './inputs.js';

/** A block of a workflow; `A` is its attrs' type once checked against its kind's schema. */
export interface WorkflowBlock<A = Record<string, unknown>> {
  /** Its index among its siblings (top-level blocks: in the document). */
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
  /** `attrs.when`: the block runs only when this expression holds (docs/runs.md, "Control flow"). */
  when?: CompiledExpression;
  /** A loop's or repeat block's child blocks. */
  children?: WorkflowBlock[];
  /** A branch block's cases or a parallel block's branches. */
  arms?: WorkflowArm[];
  /** Loop: `items`; repeat: `until`. */
  expression?: CompiledExpression;
}

/** A case of a branch block or a branch of a parallel block. */
export interface WorkflowArm {
  name: string;
  /** A case's condition; absent on the else case. */
  when?: CompiledExpression;
  onError?: 'stop' | 'continue';
  blocks: WorkflowBlock[];
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
 * (`kinds`: the deployment's; the built-in ones by default), with their checks, and the control
 * nodes (blocks/control/nodes.ts) with their children. Throws 400 `invalid_workflow` (with one
 * detail per problem, at the node's path) when a block cannot run.
 */
export function parseWorkflow(content: unknown, fail: (details: ValidationIssue[]) => Error, kinds: BlockKinds = builtinBlockKindRegistry()): WorkflowBlock[] {
  const nodes = ((content as { content?: RichNode[] } | null)?.content ?? []) as RichNode[];
  const parser = new WorkflowParser(kinds);
  const blocks = parser.blocks(nodes, 'content', 0);
  if (parser.issues.length) throw fail(parser.issues);
  return blocks;
}

class WorkflowParser {
  readonly issues: ValidationIssue[] = [];
  private readonly names = new Map<string, string>();
  private readonly ids = new Set<string>();

  constructor(private readonly kinds: BlockKinds) {}

  blocks(nodes: readonly RichNode[], at: string, depth: number): WorkflowBlock[] {
    return nodes.map((node, index) => this.block(node, index, `${at}.${index}`, depth));
  }

  private block(node: RichNode, index: number, at: string, depth: number): WorkflowBlock {
    const { issues } = this;
    const attrs = (node.attrs ?? {}) as Record<string, unknown>;
    const id = typeof attrs.id === 'string' && attrs.id ? attrs.id : depth === 0 ? `block-${index}` : `${at.replace(/^content\./, 'block-').replace(/\.content\./g, '-')}`;
    const name = typeof attrs.name === 'string' && attrs.name ? attrs.name : id;
    const control = (controlNodeTypes as Record<string, ControlKind | undefined>)[node.type];
    const definition = control ? undefined : this.kinds.classify(node.type, attrs);
    const kind: BlockKind = control ?? definition?.kind ?? 'text';
    const block: WorkflowBlock = { index, id, name, type: node.type, kind, replayable: definition?.replayable ?? false, attrs, text: control ? '' : nodeText(node) };
    if (attrs.onError !== undefined) {
      if (attrs.onError === 'stop' || attrs.onError === 'continue') block.onError = attrs.onError;
      else issues.push({ field: `${at}.attrs.onError`, constraint: 'isIn', message: 'must be stop or continue' });
    }
    if (kind === 'text') {
      if (depth > 0) issues.push({ field: `${at}`, constraint: 'nesting', message: `a ${node.type} node cannot run: a container holds executable blocks only` });
      return block;
    }
    if (depth > 0 && topLevelOnlyKinds.has(kind)) issues.push({ field: `${at}`, constraint: 'nesting', message: `${kind} blocks are top-level only; they cannot be inside a branch, loop or parallel block` });
    if (!NAME.test(name)) issues.push({ field: `${at}.attrs.name`, constraint: 'pattern', message: 'a block name is a letter or _ then letters, digits, _ or - (at most 64)' });
    const seen = this.names.get(name);
    if (seen !== undefined) issues.push({ field: `${at}.attrs.name`, constraint: 'unique', message: `the name "${name}" is already used by the block at ${seen}` });
    this.names.set(name, at);
    if (depth > 0 && this.ids.has(id)) issues.push({ field: `${at}.attrs.id`, constraint: 'unique', message: `the id "${id}" is already used` });
    this.ids.add(id);
    if (attrs.when !== undefined) block.when = this.expression(attrs.when, `${at}.attrs.when`);
    if (definition) {
      for (const issue of [...this.kinds.check(kind, attrs, block.text), ...failurePolicyIssues(attrs)]) {
        issues.push({ ...issue, field: issue.field ? `${at}.attrs.${issue.field}` : `${at}.attrs` });
      }
    }
    if (control) parseControl(this, block, node, at, depth);
    return block;
  }

  /** Compiles an expression attr, or records why it cannot be. */
  expression(source: unknown, field: string): CompiledExpression | undefined {
    if (typeof source !== 'string') {
      this.issues.push({ field, constraint: 'isString', message: 'an expression is a string (CEL)' });
      return undefined;
    }
    try {
      return compileExpression(source);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      this.issues.push({ field, constraint: error.reason, message: `${error.message} (at position ${error.position} of the expression)` });
      return undefined;
    }
  }
}

export type { WorkflowParser };

