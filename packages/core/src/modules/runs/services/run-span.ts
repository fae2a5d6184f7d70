import { context, SpanKind, SpanStatusCode, trace, tracer } from '../../../kernel/observability/tracing.js';
import type { Run } from '../entities/run.entity.js';
import type { RunState } from './run-state.js';

/**
 * Runs one attempt of a run inside its span (`invoke_workflow`, the GenAI conventions' workflow
 * operation): the model call and tool spans of its blocks are its children. The span ends with the
 * attempt, carrying the status the run reached (`trellis.run.status`).
 */
export async function runSpan<T>(run: Pick<Run, 'id' | 'attempt' | 'documentId'>, work: () => Promise<T>, state: Pick<RunState, 'status' | 'error'>): Promise<T> {
  const span = tracer().startSpan('invoke_workflow', {
    kind: SpanKind.INTERNAL,
    attributes: { 'gen_ai.operation.name': 'invoke_workflow', 'trellis.run.id': run.id, 'trellis.run.attempt': run.attempt, ...(run.documentId ? { 'trellis.document.id': run.documentId } : {}) },
  });
  try {
    return await context.with(trace.setSpan(context.active(), span), work);
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
    throw error;
  } finally {
    span.setAttribute('trellis.run.status', state.status);
    if (state.error) {
      span.setAttribute('error.type', state.error.code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: state.error.message });
    }
    span.end();
  }
}
