import { AttrsValidator } from './attrs.js';
import type { BlockExecutor } from './executor.js';
import type { AttrIssue, BlockKindDefinition, BlockKindServices } from './kind.js';

/**
 * The block kinds of a deployment, by kind and by node type: what the workflow parser classifies
 * nodes with and validates attrs against, and what the engine's executors are made from. Two
 * kinds with one name, or one node type claimed twice by kinds that do not say which nodes they
 * accept, are refused when the registry is made (at startup).
 */
export class BlockKinds {
  private readonly byKind = new Map<string, { definition: BlockKindDefinition; validator: AttrsValidator }>();
  private readonly byNodeType = new Map<string, BlockKindDefinition[]>();

  constructor(definitions: Iterable<BlockKindDefinition>) {
    for (const definition of definitions) {
      if (definition.kind === 'text') throw new Error('The block kind name "text" is reserved (blocks that do not run).');
      if (this.byKind.has(definition.kind)) throw new Error(`Two block kinds are named "${definition.kind}".`);
      const claims = this.byNodeType.get(definition.nodeType) ?? [];
      if (claims.some((other) => !other.accepts || !definition.accepts)) {
        throw new Error(`Block kinds "${claims.map((c) => c.kind).join('", "')}" and "${definition.kind}" both take every ${definition.nodeType} node.`);
      }
      this.byKind.set(definition.kind, { definition, validator: new AttrsValidator(definition.attrs) });
      this.byNodeType.set(definition.nodeType, [...claims, definition]);
    }
  }

  /** Every registered kind, in registration order. */
  get all(): BlockKindDefinition[] {
    return [...this.byKind.values()].map((entry) => entry.definition);
  }

  get(kind: string): BlockKindDefinition | undefined {
    return this.byKind.get(kind)?.definition;
  }

  /** The kind of a node, or undefined for a text block (a node no kind takes). */
  classify(nodeType: string, attrs: Readonly<Record<string, unknown>>): BlockKindDefinition | undefined {
    return this.byNodeType.get(nodeType)?.find((definition) => !definition.accepts || definition.accepts(attrs));
  }

  /** The problems of a block's attrs (field names relative to the attrs), in the schema's field order. */
  check(kind: string, attrs: Readonly<Record<string, unknown>>, text: string): AttrIssue[] {
    const entry = this.byKind.get(kind);
    if (!entry) return [];
    const issues = entry.validator.check(attrs);
    for (const issue of entry.definition.check?.(attrs, text) ?? []) {
      if (!issues.some((other) => other.field === issue.field)) issues.push(issue);
    }
    return entry.validator.sorted(issues);
  }

  /** One executor per kind, made with the container's services. */
  executors(services: BlockKindServices): Map<string, BlockExecutor> {
    return new Map(this.all.map((definition) => [definition.kind, definition.executor(services) as BlockExecutor]));
  }
}
