import type { Static, TObject } from '@sinclair/typebox';
import type { ServiceIdentifier } from 'inversify';
import type { BlockExecutor } from './executor.js';

/** What a kind's executor factory may take from the container (looked up when it is called). */
export interface BlockKindServices {
  get<T>(id: ServiceIdentifier<T>): T;
  /** The service, or undefined when this deployment binds none (the AI gateway, the sandbox). */
  optional<T>(id: ServiceIdentifier<T>): T | undefined;
}

/** A problem a kind's own check found, for a field of its attrs (`prompt`, not the block's path). */
export interface AttrIssue {
  field: string;
  constraint: string;
  message: string;
}

/**
 * One kind of block, declared once: the document node that is this kind, the schema of its attrs
 * (which validates a workflow and types what the executor receives), whether it may run again
 * after a crash, and its executor. Built-in kinds are in `kinds/`; a package adds one by binding
 * it to `blockKindServiceIdentifier` (see docs/runs.md, "Writing a block kind").
 */
export interface BlockKindDefinition<A extends TObject = TObject> {
  /** The kind's name (`llm`): `WorkflowBlock.kind`. Unique among the registered kinds. */
  readonly kind: string;
  /** The rich-text node type that is this kind (`llmBlock`). */
  readonly nodeType: string;
  /**
   * The attrs' schema (TypeBox: JSON Schema and a TypeScript type in one). Other attrs (`id`,
   * `name`, `onError`, an editor's own) are allowed. A field's schema may carry
   * `attrIssue(constraint, message)` to say how its failure is reported.
   */
  readonly attrs: A;
  /**
   * true: cheap, deterministic and touching nothing outside the run, so no checkpoint is written
   * between two such blocks and a continuation may run it again. false: always starts from a
   * checkpoint and is followed by one (anything that calls out, costs, or waits).
   */
  readonly replayable: boolean;
  /** Whether a node of `nodeType` with these attrs is this kind; otherwise it is a text block. */
  readonly accepts?: (attrs: Readonly<Record<string, unknown>>) => boolean;
  /**
   * Checks the schema cannot state, run whether the schema passed or not (so on unchecked
   * attrs): for example a prompt that may be in the attrs or in the block's text.
   */
  readonly check?: (attrs: Readonly<Record<string, unknown>>, text: string) => AttrIssue[];
  /** Makes the kind's executor (once per run service); it receives the attrs validated and typed. */
  readonly executor: (services: BlockKindServices) => BlockExecutor<Static<A>>;
}

/** Declares a block kind (an identity function that infers the attrs' type for the executor). */
export function defineBlockKind<A extends TObject>(definition: BlockKindDefinition<A>): BlockKindDefinition<A> {
  return definition;
}

/** Multi-binding: every registered block kind (runs binds the built-in ones; packages add theirs). */
export const blockKindServiceIdentifier: ServiceIdentifier<BlockKindDefinition> = Symbol.for('trellis.runs.BlockKind');
