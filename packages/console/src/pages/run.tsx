import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, show, when, type ModelCall, type Page, type RunRecord } from '../api';
import { Status } from '../app';
import { followRun, type RunEvent, type StreamState } from '../events';
import { useLoad } from '../hooks';
import { link, navigate } from '../router';
import { buildTimeline, ModelCalls, Timeline } from '../timeline';
import { startRun } from './runs';

const finished = new Set(['completed', 'failed', 'timed_out', 'cancelled']);

/**
 * Model calls of the run, when this host records them (`GET .../model-calls`, paged): `null`
 * when the route is not there (404), so the section is hidden.
 */
async function loadModelCalls(documentId: string, runId: string): Promise<ModelCall[] | null> {
  const calls: ModelCall[] = [];
  for (let page = 1; page <= 20; page++) {
    try {
      const answer = await api<Page<ModelCall>>('GET', `/documents/${documentId}/runs/${runId}/model-calls?page=${page}&size=100`);
      calls.push(...answer.items);
      if (answer.items.length < 100 || calls.length >= answer.total) break;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  }
  return calls;
}

export function RunPage({ documentId, runId }: { documentId: string; runId: string }) {
  const record = useLoad(() => api<RunRecord>('GET', `/documents/${documentId}/runs/${runId}`), [documentId, runId]);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [stream, setStream] = useState<{ state: StreamState; detail?: string }>({ state: 'connecting' });
  const [generation, setGeneration] = useState(0);
  const [modelCalls, setModelCalls] = useState<ModelCall[] | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const lastSeq = useRef(0);
  const view = useMemo(() => buildTimeline(events), [events]);

  useEffect(() => {
    setEvents([]);
    lastSeq.current = 0;
  }, [documentId, runId]);

  // Follow the event log from the last event shown; a new generation (after a resume) continues.
  useEffect(() => {
    const stop = followRun(documentId, runId, {
      after: lastSeq.current,
      onEvent: (event) => {
        lastSeq.current = event.seq;
        setEvents((list) => [...list, event]);
      },
      onState: (state, detail) => {
        setStream({ state, detail });
        if (state === 'ended') record.reload();
      },
    });
    return stop;
  }, [documentId, runId, generation]);

  const status = record.data?.status;
  const done = view.complete !== undefined || (status !== undefined && finished.has(status));

  // The record can lag the stream (an event is published before the row that records it is
  // written): while the events say the run waits or ended and the record does not yet, read it again.
  const lagging = status !== undefined && ((view.waiting !== undefined && status !== 'waiting') || (view.complete !== undefined && !finished.has(status)));
  useEffect(() => {
    if (!lagging || record.loading) return;
    const timer = setTimeout(record.reload, 250);
    return () => clearTimeout(timer);
  }, [lagging, record.loading, record.data]);
  useEffect(() => {
    if (!done) return;
    loadModelCalls(documentId, runId).then(setModelCalls, () => setModelCalls(null));
  }, [done, documentId, runId]);

  // The log replays `run_waiting` (the stream ends there), so the events alone say whether it waits.
  const waiting = view.waiting;

  const cancel = async () => {
    setMessage(null);
    try {
      await api('POST', `/documents/${documentId}/runs/${runId}/cancel`);
      setMessage('Cancel requested.');
      if (stream.state === 'ended') setGeneration((g) => g + 1);
    } catch (e) {
      setMessage(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
  };
  const rerun = async () => {
    setMessage(null);
    try {
      const next = await startRun(documentId, record.data?.inputs ?? {});
      navigate(link('runs', documentId, next));
    } catch (e) {
      setMessage(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
  };

  return (
    <section aria-labelledby="run-title">
      <p class="crumbs">
        <a href={link()}>Projects</a>
        {record.data?.projectId && (
          <>
            {' / '}
            <a href={link('projects', record.data.projectId, 'runs', { document: documentId })}>Runs</a>
          </>
        )}{' '}
        /
      </p>
      <h1 id="run-title">
        Run <code>{runId.slice(0, 8)}</code>{' '}
        {status && (
          <span class={`badge badge-${status}`} data-testid="run-status">
            {status}
          </span>
        )}
      </h1>
      <Status loading={record.loading && !record.data} error={record.error} />
      <p class="muted small" aria-live="polite" data-testid="stream-state">
        Stream: {stream.state}
        {stream.detail ? ` (${stream.detail})` : ''} · {events.length} events
      </p>
      <div class="actions">
        <button type="button" onClick={cancel} disabled={!status || finished.has(status)}>
          Cancel run
        </button>
        <button type="button" onClick={rerun} disabled={!record.data}>
          Re-run with the same inputs
        </button>
      </div>
      {message && (
        <p class="notice" role="status">
          {message}
        </p>
      )}
      {waiting && <AskForm documentId={documentId} runId={runId} question={waiting.question} onAnswered={() => {
            setGeneration((g) => g + 1);
            record.reload();
          }} />}
      <div class="run-grid">
        <div>
          <h2>Timeline</h2>
          <Timeline view={view} />
        </div>
        <aside aria-label="Run details">
          <h2>Details</h2>
          {record.data && (
            <dl class="facts">
              <dt>Source</dt>
              <dd>
                {record.data.source}
                {record.data.version != null ? ` (version ${record.data.version})` : ''}
              </dd>
              <dt>Started</dt>
              <dd>{when(record.data.createdAt)}</dd>
              <dt>Duration</dt>
              <dd>{record.data.duration != null ? `${record.data.duration} ms` : '—'}</dd>
              <dt>Credits</dt>
              <dd>{record.data.usedCredits ?? '—'}</dd>
              <dt>Inputs</dt>
              <dd>
                <pre class="small">{show(record.data.inputs ?? {})}</pre>
              </dd>
              {record.data.usage != null && (
                <>
                  <dt>Usage</dt>
                  <dd>
                    <pre class="small">{show(record.data.usage)}</pre>
                  </dd>
                </>
              )}
              {done && record.data.output !== undefined && (
                <>
                  <dt>Output</dt>
                  <dd>
                    <pre class="small" data-testid="run-output">
                      {show(record.data.output)}
                    </pre>
                  </dd>
                </>
              )}
            </dl>
          )}
        </aside>
      </div>
      {modelCalls && <ModelCalls calls={modelCalls} />}
    </section>
  );
}

function AskForm({ documentId, runId, question, onAnswered }: { documentId: string; runId: string; question: string; onAnswered(): void }) {
  const [answer, setAnswer] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('POST', `/documents/${documentId}/runs/${runId}/resume`, { answer });
      setAnswer('');
      onAnswered();
    } catch (e) {
      setError(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="panel ask" onSubmit={submit} aria-labelledby="ask-title">
      <h2 id="ask-title">The run is waiting for an answer</h2>
      <label for="ask-answer">{question || 'Answer'}</label>
      <textarea id="ask-answer" rows={2} required value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {busy ? 'Sending…' : 'Send answer and resume'}
      </button>
    </form>
  );
}
