/**
 * Who a provider call is made for: the run (its attempt, credit hold and block) or the
 * conversation turn. A frame of it is passed down explicitly (run attempt → block → model turn →
 * AI gateway): an AsyncLocalStorage would switch Node 20's promise hooks on for the whole process
 * (see test/integration/promise-hooks.int.spec.ts).
 */
export interface ModelCallScope {
  runId?: string;
  attempt?: number;
  reservationId?: string | null;
  blockPath?: string;
  conversationId?: string;
  turnId?: string;
  teamId?: string | null;
  userId?: string | null;
}

/** A scope with the calls made so far per block path, for the whole run attempt or turn (a block run twice goes on counting). */
export interface ModelCallFrame extends ModelCallScope {
  readonly counters: Map<string, number>;
}

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
