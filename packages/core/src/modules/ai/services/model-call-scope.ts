import type { ModelCallFrame, ModelCallScope } from '../../../ports/ai-provider.js';

export type { ModelCallFrame, ModelCallScope } from '../../../ports/ai-provider.js';

/** A frame for `scope`: within `outer` (sharing its counters) unless it starts a run attempt or turn. */
export function modelCallFrame(scope: ModelCallScope, outer?: ModelCallFrame): ModelCallFrame {
  const fresh = !outer || scope.runId !== undefined || scope.turnId !== undefined;
  return { ...outer, ...scope, counters: fresh || !outer ? new Map() : outer.counters };
}

/** The frame's scope and the index of a call starting now (undefined without a frame). */
export function nextModelCall(frame: ModelCallFrame | undefined): { scope: ModelCallScope; callIndex: number } | undefined {
  if (!frame) return undefined;
  const { counters, ...scope } = frame;
  const callIndex = (counters.get(scope.blockPath ?? '') ?? 0) + 1;
  counters.set(scope.blockPath ?? '', callIndex);
  return { scope, callIndex };
}
