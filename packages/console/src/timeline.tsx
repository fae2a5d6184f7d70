import type { ModelCall } from './api';
import { show } from './api';
import type { RunEvent } from './events';

export interface ToolCall {
  toolCallId: string;
  toolName: string;
  result?: unknown;
  done: boolean;
}

export interface BlockView {
  blockId: string;
  blockType: string;
  blockName: string;
  status: 'running' | 'completed' | 'failed' | 'waiting';
  text: string;
  output?: unknown;
  error?: { message: string; code: string };
  tools: ToolCall[];
  question?: string;
}

export interface TimelineView {
  blocks: BlockView[];
  waiting?: { blockId: string; question: string };
  runError?: { error: string; message: string };
  complete?: { duration?: number; timedOut?: boolean };
  lastSeq: number;
}

/** The timeline a run's events describe, in order; blocks keep the order they started in. */
export function buildTimeline(events: readonly RunEvent[]): TimelineView {
  const blocks: BlockView[] = [];
  const byId = new Map<string, BlockView>();
  const view: TimelineView = { blocks, lastSeq: 0 };
  const block = (id: string): BlockView => {
    let found = byId.get(id);
    if (!found) {
      found = { blockId: id, blockType: '', blockName: id, status: 'running', text: '', tools: [] };
      byId.set(id, found);
      blocks.push(found);
    }
    return found;
  };
  for (const { seq, type, data } of events) {
    view.lastSeq = Math.max(view.lastSeq, seq);
    switch (type) {
      case 'block_start': {
        const b = block(data.blockId);
        b.blockType = data.blockType ?? '';
        b.blockName = data.blockName ?? data.blockId;
        b.status = 'running';
        break;
      }
      case 'block_chunk':
        block(data.blockId).text += data.delta ?? '';
        break;
      case 'block_complete': {
        const b = block(data.blockId);
        b.output = data.output;
        b.status = 'completed';
        if (view.waiting?.blockId === data.blockId) view.waiting = undefined;
        break;
      }
      case 'block_error': {
        const b = block(data.blockId);
        b.error = { message: String(data.error ?? ''), code: String(data.code ?? '') };
        b.status = 'failed';
        break;
      }
      case 'tool_start':
        block(data.blockId).tools.push({ toolCallId: data.toolCallId, toolName: data.toolName, done: false });
        break;
      case 'tool_result': {
        const tool = block(data.blockId).tools.find((t) => t.toolCallId === data.toolCallId);
        if (tool) {
          tool.result = data.result;
          tool.done = true;
        }
        break;
      }
      case 'run_waiting': {
        const b = block(data.blockId);
        b.status = 'waiting';
        b.question = String(data.question ?? '');
        view.waiting = { blockId: data.blockId, question: String(data.question ?? '') };
        break;
      }
      case 'run_error':
        view.runError = { error: String(data.error ?? ''), message: String(data.message ?? '') };
        view.waiting = undefined;
        break;
      case 'run_complete':
        view.complete = { duration: data.duration, timedOut: data.timedOut };
        view.waiting = undefined;
        break;
    }
  }
  return view;
}

const latencyOf = (call: ModelCall): string =>
  [call.firstTokenMs != null ? `first token ${call.firstTokenMs} ms` : '', call.durationMs != null ? `total ${call.durationMs} ms` : ''].filter(Boolean).join(', ') || '—';

const num = (value: unknown): string => (value === null || value === undefined ? '—' : String(value));

export function Timeline({ view }: { view: TimelineView }) {
  if (view.blocks.length === 0 && !view.runError && !view.complete) return <p class="muted">No events yet.</p>;
  return (
    <ol class="timeline" aria-label="Run timeline">
      {view.blocks.map((b) => (
        <li key={b.blockId} class={`tl-block status-${b.status}`} data-block={b.blockId}>
          <div class="tl-head">
            <strong>{b.blockName}</strong> <span class="tag">{b.blockType || 'block'}</span> <span class={`badge badge-${b.status}`}>{b.status}</span>
          </div>
          {b.text && (
            <pre class="chunks" aria-label={`Streamed text of ${b.blockName}`}>
              {b.text}
            </pre>
          )}
          {b.tools.map((t) => (
            <div key={t.toolCallId} class="tool-call">
              <span class="tag">tool</span> <code>{t.toolName}</code> {t.done ? <pre class="small">{show(t.result)}</pre> : <span class="muted">calling…</span>}
            </div>
          ))}
          {b.question && b.status === 'waiting' && (
            <p class="wait">
              <span class="tag">waiting</span> {b.question}
            </p>
          )}
          {b.output !== undefined && (
            <details>
              <summary>Output</summary>
              <pre class="small">{show(b.output)}</pre>
            </details>
          )}
          {b.error && (
            <p class="error" role="status">
              <code>{b.error.code}</code> {b.error.message}
            </p>
          )}
        </li>
      ))}
      {view.runError && (
        <li class="tl-block status-failed">
          <strong>Run error</strong> <code>{view.runError.error}</code> {view.runError.message}
        </li>
      )}
      {view.complete && (
        <li class="tl-block status-completed" data-complete="true">
          <strong>Run complete</strong>
          {view.complete.duration !== undefined && <span> in {view.complete.duration} ms</span>}
          {view.complete.timedOut && <span class="error"> (timed out)</span>}
        </li>
      )}
    </ol>
  );
}

export function ModelCalls({ calls }: { calls: ModelCall[] }) {
  const total = calls.reduce(
    (sum, c) => ({ input: sum.input + c.usage.inputTokens, output: sum.output + c.usage.outputTokens, credits: sum.credits + c.credits }),
    { input: 0, output: 0, credits: 0 },
  );
  return (
    <section aria-labelledby="model-calls-title">
      <h2 id="model-calls-title">Model calls</h2>
      {calls.length === 0 ? (
        <p class="muted">No model calls recorded.</p>
      ) : (
        <div class="scroll">
          <table class="model-calls">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Provider</th>
                <th scope="col">Input tokens</th>
                <th scope="col">Output tokens</th>
                <th scope="col">Cached</th>
                <th scope="col">Credits</th>
                <th scope="col">Latency</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {calls.map((c) => (
                <tr key={c.id}>
                  <td>{c.model}</td>
                  <td>{c.provider}</td>
                  <td>{num(c.usage.inputTokens)}</td>
                  <td>{num(c.usage.outputTokens)}</td>
                  <td>{num(c.usage.cachedTokens)}</td>
                  <td>{num(c.credits)}</td>
                  <td>{latencyOf(c)}</td>
                  <td>{c.status}</td>
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr>
                <th scope="row" colSpan={2}>
                  Total
                </th>
                <td>{total.input}</td>
                <td>{total.output}</td>
                <td></td>
                <td>{total.credits}</td>
                <td colSpan={2}></td>
              </tr>
            </tfoot>
          </table>
        </div>
      )}
    </section>
  );
}
