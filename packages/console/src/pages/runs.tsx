import { useState } from 'preact/hooks';
import { api, ApiError, documentsOf, runStatuses, when, type Page, type Project, type RunRecord } from '../api';
import { Status } from '../app';
import { postRun } from '../events';
import { useLoad } from '../hooks';
import { link, navigate } from '../router';

/**
 * Starts a stored run of a document and opens its run page: the run's first event (`run_start`)
 * names it; the page then follows the run's event log (closing this response does not stop it).
 */
export async function startRun(documentId: string, inputs: Record<string, unknown>): Promise<string> {
  let runId: string | undefined;
  const controller = new AbortController();
  await postRun(
    `/documents/${documentId}/run`,
    { inputs },
    (event) => {
      if (event.type === 'run_start') {
        runId = String(event.data.runId);
        return true;
      }
      return false;
    },
    controller.signal,
  );
  controller.abort();
  if (!runId) throw new Error('The run did not start.');
  return runId;
}

export function RunsPage({ projectId, query }: { projectId: string; query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const documentId = query.get('document') ?? '';
  const project = useLoad(() => api<Project>('GET', `/project/${projectId}`), [projectId]);
  const runs = useLoad(
    () => api<Page<RunRecord>>('GET', documentId ? `/documents/${documentId}/runs?page=1&size=100` : `/project/${projectId}/runs?page=1&size=100`),
    [projectId, documentId],
  );
  const docs = documentsOf(project.data?.filesFolder);
  const titleOf = (id: string) => docs.find((d) => d.id === id)?.title ?? id.slice(0, 8);
  const shown = (runs.data?.items ?? []).filter((r) => !status || r.status === status);
  const setFilter = (next: { status?: string; document?: string }) => navigate(link('projects', projectId, 'runs', { status, document: documentId, ...next }));

  return (
    <section aria-labelledby="runs-title">
      <p class="crumbs">
        <a href={link()}>Projects</a> / <a href={link('projects', projectId)}>{project.data?.name ?? 'Project'}</a> /
      </p>
      <h1 id="runs-title">Runs</h1>
      {/* Made anew, not opened, when the documents arrive: Chromium 156 can keep a <details> that
          was laid out closed drawn closed after it is opened and its picker filled. */}
      <StartRun key={docs.length > 0 ? 'documents' : 'none'} projectId={projectId} docs={docs} defaultDocument={documentId} />
      <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label for="filter-status">Status</label>
          <select id="filter-status" value={status} onChange={(e) => setFilter({ status: e.currentTarget.value })}>
            <option value="">Any status</option>
            {runStatuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="filter-document">Document</label>
          <select id="filter-document" value={documentId} onChange={(e) => setFilter({ document: e.currentTarget.value })}>
            <option value="">Every document</option>
            {docs.map((d) => (
              <option key={d.id} value={d.id}>
                {d.title}
              </option>
            ))}
          </select>
        </div>
        <button type="button" onClick={runs.reload}>
          Refresh
        </button>
      </form>
      <Status loading={runs.loading} error={runs.error} />
      {runs.data && (
        <p class="muted small" aria-live="polite">
          {shown.length} shown of the {runs.data.items.length} newest ({runs.data.total} in all)
        </p>
      )}
      <div class="scroll">
        <table class="runs">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Document</th>
              <th scope="col">Status</th>
              <th scope="col">Source</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.id} data-run={r.id}>
                <td>
                  <a href={link('runs', r.documentId, r.id)}>{r.id.slice(0, 8)}</a>
                </td>
                <td>{titleOf(r.documentId)}</td>
                <td>
                  <span class={`badge badge-${r.status}`}>{r.status}</span>
                </td>
                <td>
                  {r.source}
                  {r.version != null ? ` v${r.version}` : ''}
                </td>
                <td>{when(r.createdAt)}</td>
                <td>{r.duration != null ? `${r.duration} ms` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function StartRun({ docs, defaultDocument }: { projectId: string; docs: { id: string; title: string }[]; defaultDocument: string }) {
  const [documentId, setDocumentId] = useState(defaultDocument);
  const [inputs, setInputs] = useState('{}');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const chosen = documentId || docs[0]?.id || '';
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(inputs || '{}') as Record<string, unknown>;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('Inputs must be a JSON object.');
    } catch (e) {
      setError(`Inputs: ${(e as Error).message}`);
      return;
    }
    setBusy(true);
    try {
      const runId = await startRun(chosen, parsed);
      navigate(link('runs', chosen, runId));
    } catch (e) {
      setError(e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <details class="panel" open={docs.length > 0}>
      <summary>Start a run</summary>
      <form onSubmit={submit}>
        <label for="start-document">Document to run</label>
        <select id="start-document" value={chosen} onChange={(e) => setDocumentId(e.currentTarget.value)}>
          {docs.map((d) => (
            <option key={d.id} value={d.id}>
              {d.title}
            </option>
          ))}
        </select>
        <label for="start-inputs">Inputs (JSON object, keyed by input block name)</label>
        <textarea id="start-inputs" rows={3} value={inputs} onInput={(e) => setInputs(e.currentTarget.value)} spellcheck={false} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || !chosen}>
          {busy ? 'Starting…' : 'Start run'}
        </button>
      </form>
    </details>
  );
}
