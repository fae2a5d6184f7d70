import type { RichNode } from '../../../documents/index.js';
import type { WorkflowArm, WorkflowBlock, WorkflowParser } from '../workflow.js';
import { armNodeTypes, MAX_CONTROL_DEPTH, MAX_ITERATIONS, MAX_LOOP_CONCURRENCY } from './nodes.js';

const ARM_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** Reads a control node's attrs, children and arms into `block` (see nodes.ts), recording problems on the parser. */
export function parseControl(parser: WorkflowParser, block: WorkflowBlock, node: RichNode, at: string, depth: number): void {
  const { issues } = parser;
  const attrs = block.attrs;
  if (depth + 1 > MAX_CONTROL_DEPTH) issues.push({ field: at, constraint: 'nesting', message: `containers nest at most ${MAX_CONTROL_DEPTH} deep` });
  const content = node.content ?? [];
  const integer = (key: string, min: number, max: number, required: boolean) => {
    const value = attrs[key];
    if (value === undefined || value === null) {
      if (required) issues.push({ field: `${at}.attrs.${key}`, constraint: 'required', message: `a ${block.kind} block needs ${key} (an integer from ${min} to ${max})` });
      return;
    }
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) issues.push({ field: `${at}.attrs.${key}`, constraint: 'range', message: `must be an integer from ${min} to ${max}` });
  };
  const required = (key: string) => {
    if (attrs[key] === undefined) {
      issues.push({ field: `${at}.attrs.${key}`, constraint: 'required', message: `a ${block.kind} block needs ${key} (an expression)` });
      return undefined;
    }
    return parser.expression(attrs[key], `${at}.attrs.${key}`);
  };
  if (block.kind === 'loop' || block.kind === 'repeat') {
    if (block.kind === 'loop') {
      block.expression = required('items');
      integer('concurrency', 1, MAX_LOOP_CONCURRENCY, false);
    } else {
      block.expression = required('until');
      integer('maxIterations', 1, MAX_ITERATIONS, true);
    }
    block.children = parser.blocks(content, `${at}.content`, depth + 1);
    if (!block.children.length) issues.push({ field: `${at}.content`, constraint: 'required', message: `a ${block.kind} block holds at least one block` });
    return;
  }
  const armType = armNodeTypes[block.kind as 'branch' | 'parallel'];
  const names = new Set<string>();
  block.arms = content.map((armNode, i): WorkflowArm => {
    const armAt = `${at}.content.${i}`;
    const armAttrs = (armNode.attrs ?? {}) as Record<string, unknown>;
    if (armNode.type !== armType) issues.push({ field: armAt, constraint: 'nesting', message: `a ${block.type} holds ${armType} nodes only` });
    const last = i === content.length - 1;
    const fallback = block.kind === 'branch' ? (armAttrs.when === undefined && last ? 'else' : `case-${i}`) : undefined;
    const name = typeof armAttrs.name === 'string' && armAttrs.name ? armAttrs.name : fallback;
    if (name === undefined) issues.push({ field: `${armAt}.attrs.name`, constraint: 'required', message: 'a parallel branch needs a name (its key in the output)' });
    else if (!ARM_NAME.test(name)) issues.push({ field: `${armAt}.attrs.name`, constraint: 'pattern', message: 'an arm name is a letter or _ then letters, digits, _ or - (at most 64)' });
    else if (names.has(name)) issues.push({ field: `${armAt}.attrs.name`, constraint: 'unique', message: `the name "${name}" is already used in this ${block.kind} block` });
    if (name) names.add(name);
    const arm: WorkflowArm = { name: name ?? `branch-${i}`, blocks: parser.blocks(armNode.content ?? [], `${armAt}.content`, depth + 1) };
    if (block.kind === 'branch') {
      if (armAttrs.when !== undefined) arm.when = parser.expression(armAttrs.when, `${armAt}.attrs.when`);
      else if (!last) issues.push({ field: `${armAt}.attrs.when`, constraint: 'required', message: 'only the last case of a branch block may go without when (the else case)' });
    } else if (armAttrs.onError !== undefined) {
      if (armAttrs.onError === 'stop' || armAttrs.onError === 'continue') arm.onError = armAttrs.onError;
      else issues.push({ field: `${armAt}.attrs.onError`, constraint: 'isIn', message: 'must be stop or continue' });
    }
    return arm;
  });
  if (!block.arms.length) issues.push({ field: `${at}.content`, constraint: 'required', message: `a ${block.type} holds at least one ${armType}` });
}
