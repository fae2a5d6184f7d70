import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, documentsOf, type Project } from '../api';
import { Status } from '../app';
import { postRun, type RunEvent } from '../events';
import { useLoad } from '../hooks';
import { link } from '../router';
import { buildTimeline, Timeline } from '../timeline';

/** Title of the project's scratch document the playground converts its text through. */
export const SCRATCH_TITLE = 'Console playground';

const example = `:::inputBlock {"id":"in1","name":"topic","type":"string","required":true}
:::

:::codeBlock {"id":"c1","name":"shout","language":"javascript"}
emit('thinking about ' + inputs.topic);
return inputs.topic.toUpperCase();
:::

:::outputBlock {"id":"o1","name":"result"}
{{ shout }}
:::
`;

interface DocumentContent {
  id: string;
  content: unknown;
  content_hash?: string;
}

/**
 * Edits a workflow as markdown-ir text and runs it in debug mode (`POST /documents/{id}/run` with
 * `content`: nothing is stored, the events stream on that response only). The server converts the
 * text: it is written to the project's scratch document ("Console playground") with
 * `content_format: "markdown-ir"` and read back as document JSON, which the debug run sends.
 */
export function PlaygroundPage({ projectId, documentId }: { projectId: string; documentId?: string }) {
  const project = useLoad(() => api<Project>('GET', `/project/${projectId}`), [projectId]);
  const docs = documentsOf(project.data?.filesFolder);
  const [text, setText] = useState(example);
  const [inputs, setInputs] = useState('{"topic": "gardens"}');
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const controller = useRef<AbortController | null>(null);
  const view = useMemo(() => buildTimeline(events), [events]);
  const opened = docs.find((d) => d.id === documentId);

  useEffect(() => {
    if (!documentId) return;
    api<{ content: string }>('GET', `/documents/${documentId}/content?format=markdown-ir&keep_comments=1`).then(
      (doc) => setText(doc.content),
      (e: Error) => setError(`Could not open the document: ${e.message}`),
    );
  }, [documentId]);
  useEffect(() => () => controller.current?.abort(), []);

  const scratch = async (): Promise<string> => {
    const found = documentsOf((await api<Project>('GET', `/project/${projectId}`)).filesFolder).find((d) => d.title === SCRATCH_TITLE);
    if (found) {
      await api('POST', '/documents', { documentId: found.id, content: text, content_format: 'markdown-ir' });
      return found.id;
    }
    const created = await api<{ id: string }>('POST', '/documents', { projectId, title: SCRATCH_TITLE, content: text, content_format: 'markdown-ir' });
    return created.id;
  };

  const run = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setNotice(null);
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(inputs || '{}') as Record<string, unknown>;
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('Inputs must be a JSON object.');
    } catch (e) {
      setError(`Inputs: ${(e as Error).message}`);
      return;
    }
    setRunning(true);
    setEvents([]);
    controller.current?.abort();
    controller.current = new AbortController();
    try {
      const id = await scratch();
      const converted = await api<DocumentContent>('GET', `/documents/${id}/content`);
      await postRun(`/documents/${id}/run`, { inputs: parsed, content: converted.content }, (e) => setEvents((list) => [...list, e]), controller.current.signal);
    } catch (e) {
      if ((e as Error).name !== 'AbortError') setError(e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e));
    } finally {
      setRunning(false);
    }
  };

  const save = async () => {
    if (!documentId) return;
    setError(null);
    try {
      await api('POST', '/documents', { documentId, content: text, content_format: 'markdown-ir' });
      setNotice(`Saved to “${opened?.title ?? documentId}”.`);
    } catch (e) {
      setError(e instanceof ApiError ? `${e.status} ${e.code}: ${e.message}` : String(e));
    }
  };

  return (
    <section aria-labelledby="playground-title">
      <p class="crumbs">
        <a href={link()}>Projects</a> / <a href={link('projects', projectId)}>{project.data?.name ?? 'Project'}</a> /
      </p>
      <h1 id="playground-title">Playground</h1>
      <Status loading={project.loading} error={project.error} />
      <p class="muted small">
        Debug runs execute the text below without storing a run. The text is converted on the server through the project's scratch document “{SCRATCH_TITLE}”.
      </p>
      <div class="filters">
        <div>
          <label for="pg-open">Open a document</label>
          <select
            id="pg-open"
            value={documentId ?? ''}
            onChange={(e) => {
              location.hash = link('playground', projectId, { document: e.currentTarget.value || undefined });
            }}
          >
            <option value="">Example workflow</option>
            {docs.map((d) => (
              <option key={d.id} value={d.id}>
                {d.title}
              </option>
            ))}
          </select>
        </div>
      </div>
      <form class="playground" onSubmit={run}>
        <label for="pg-text">Workflow (markdown-ir)</label>
        <textarea id="pg-text" class="code" rows={16} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <label for="pg-inputs">Inputs (JSON object)</label>
        <textarea id="pg-inputs" class="code" rows={2} spellcheck={false} value={inputs} onInput={(e) => setInputs(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={running}>
            {running ? 'Running…' : 'Run in debug mode'}
          </button>
          {running && (
            <button type="button" onClick={() => controller.current?.abort()}>
              Stop
            </button>
          )}
          {documentId && (
            <button type="button" onClick={save}>
              Save to this document
            </button>
          )}
        </div>
      </form>
      <h2>Debug run</h2>
      <Timeline view={view} />
    </section>
  );
}
