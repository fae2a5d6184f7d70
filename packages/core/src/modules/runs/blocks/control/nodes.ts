/**
 * Control-flow nodes of a workflow (docs/runs.md, "Control flow"). They are rich-text container
 * nodes holding other block nodes; the engine runs them itself (they are not block kinds):
 *
 * - `branchBlock` holds `branchCase` nodes; the first case whose `when` holds runs (a case
 *   without `when`, last, is the else). Output: the chosen case's result.
 * - `loopBlock` runs its child blocks once per element of the list `items` evaluates to, at most
 *   `concurrency` iterations at once. Output: the array of the iterations' results, in order.
 * - `repeatBlock` runs its child blocks again until `until` holds, at most `maxIterations` times.
 *   Output: the last iteration's result.
 * - `parallelBlock` holds `parallelBranch` nodes, run at once. Output: an object by branch name.
 *
 * The result of an iteration or branch is the output of its last child block.
 */
export const controlNodeTypes = {
  branchBlock: 'branch',
  loopBlock: 'loop',
  repeatBlock: 'repeat',
  parallelBlock: 'parallel',
} as const;
export type ControlKind = (typeof controlNodeTypes)[keyof typeof controlNodeTypes];

/** The node types of the arms of a branch or parallel block. */
export const armNodeTypes = { branch: 'branchCase', parallel: 'parallelBranch' } as const;

export const isControlKind = (kind: string): kind is ControlKind => kind === 'branch' || kind === 'loop' || kind === 'repeat' || kind === 'parallel';

/** The most containers one inside another. */
export const MAX_CONTROL_DEPTH = 8;
/** The most iterations of a loop run at once (`concurrency`), and its default. */
export const MAX_LOOP_CONCURRENCY = 16;
/** The most iterations of a repeat block (`maxIterations`) and items of a loop. */
export const MAX_ITERATIONS = 1_000;
/** Kinds that cannot sit inside a container: what the run as a whole declares or waits on. */
export const topLevelOnlyKinds: ReadonlySet<string> = new Set(['input', 'output', 'ask']);
