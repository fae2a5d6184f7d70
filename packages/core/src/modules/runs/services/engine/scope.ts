import type { BlockSession } from '../../entities/run.entity.js';

/**
 * Where a block runs. At the top level nothing is set; inside a branch, loop or parallel block,
 * `path` names the container and iteration or branch (`items[2]`, `checks.fast`, nested
 * `outer[1].inner.fast`), `iteration` the innermost iteration and `branch` the innermost branch.
 * These are the fields added to the block's events and session entries.
 */
export interface Where {
  path?: string;
  iteration?: number;
  branch?: string;
}

/** Names visible to a block (inputs, earlier blocks, loop variables) and where it runs. */
export interface Scope {
  where: Where;
  vars: Map<string, unknown>;
}

/** The where-fields of a session entry, for its events. */
export function whereOf(session: BlockSession): Where {
  const where: Where = {};
  if (session.path !== undefined) where.path = session.path;
  if (session.iteration !== undefined) where.iteration = session.iteration;
  if (session.branch !== undefined) where.branch = session.branch;
  return where;
}

/** A scope inside `parent`: an iteration (`[i]`) or a branch (`.name`) of the container `name`, with more variables. */
export function childScope(parent: Scope, name: string, step: { iteration: number } | { branch: string }, extra: Record<string, unknown> = {}): Scope {
  const prefix = parent.where.path === undefined ? name : `${parent.where.path}.${name}`;
  const where: Where = { ...parent.where };
  if ('iteration' in step) {
    where.path = `${prefix}[${step.iteration}]`;
    where.iteration = step.iteration;
  } else {
    where.path = `${prefix}.${step.branch}`;
    where.branch = step.branch;
  }
  const vars = new Map(parent.vars);
  for (const [key, value] of Object.entries(extra)) vars.set(key, value);
  return { where, vars };
}
