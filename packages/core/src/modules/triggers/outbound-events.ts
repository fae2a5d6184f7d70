import type { TrellisHooks } from '../../kernel/hooks.js';
import './hooks.js';
import type {} from '../runs/index.js';
import type {} from '../conversations/index.js';
import type { OutboundEvent } from './services/outbound.service.js';

type Finished = TrellisHooks['run.finished'];
type Waiting = TrellisHooks['run.waiting'];

/** The outbound events of a run hook: `run.completed` or `run.failed` (failed, timed out, cancelled) when it ends, `run.waiting` at an ask block, and `run.waiting` with `budget.reached` when it waits for its budget. */
export function runEventsOf(kind: 'finished', run: Finished): OutboundEvent[];
export function runEventsOf(kind: 'waiting', run: Waiting): OutboundEvent[];
export function runEventsOf(kind: 'finished' | 'waiting', run: Finished | Waiting): OutboundEvent[] {
  const subject = { runId: run.runId, documentId: run.documentId, projectId: run.projectId, teamId: run.teamId, userId: run.userId, source: run.source, version: run.version };
  if (kind === 'waiting') {
    const waiting = run as Waiting;
    if (waiting.reason === 'budget' && waiting.budget) {
      // A run that waits for its budget (docs/runs.md, "Budgets"): the run is waiting, and a budget was reached.
      const { scope, credits, spent, required } = waiting.budget;
      return [
        { type: 'run.waiting', userId: run.userId, teamId: run.teamId, key: `${run.runId}:budget:${spent}`, data: { ...subject, status: 'waiting', blockId: waiting.blockId, question: waiting.question, reason: 'budget', budget: waiting.budget } },
        { type: 'budget.reached', userId: run.userId, teamId: run.teamId, key: `run:${run.runId}:${spent}`, data: { teamId: run.teamId, key: `${scope}:${scope === 'run' ? run.runId : run.documentId}`, budget: credits, spent, period: null, scope, required, runId: run.runId, documentId: run.documentId } },
      ];
    }
    return [{ type: 'run.waiting', userId: run.userId, teamId: run.teamId, key: `${run.runId}:${waiting.blockId}:${waiting.question}`, data: { ...subject, status: 'waiting', blockId: waiting.blockId, question: waiting.question } }];
  }
  const finished = run as Finished;
  const type = finished.status === 'completed' ? 'run.completed' : 'run.failed';
  return [
    {
      type,
      userId: run.userId,
      teamId: run.teamId,
      key: `${run.runId}:${finished.status}`,
      data: { ...subject, status: finished.status, output: finished.output, error: finished.error, usage: finished.usage, durationMs: finished.durationMs },
    },
  ];
}
