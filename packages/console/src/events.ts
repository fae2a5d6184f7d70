import { EventSource } from 'eventsource';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { apiBase, authHeaders, errorOf } from './api';

/** One event of a run's log: its sequence number, its type and its fields. */
export interface RunEvent {
  seq: number;
  type: string;
  data: Record<string, any>;
}

export const eventTypes = [
  'run_start',
  'block_start',
  'block_chunk',
  'block_complete',
  'block_end',
  'block_error',
  'tool_start',
  'tool_result',
  'run_waiting',
  'run_error',
  'run_complete',
] as const;

export type StreamState = 'connecting' | 'open' | 'reconnecting' | 'ended' | 'failed';

export interface FollowOptions {
  /** Events after this sequence number (the last one already shown). */
  after: number;
  onEvent(event: RunEvent): void;
  onState(state: StreamState, detail?: string): void;
}

/**
 * Follows `GET /documents/{id}/runs/{runId}/events` with the `eventsource` package, whose
 * `fetch` option sends the bearer token (a browser's own EventSource cannot). After a dropped
 * connection it reconnects by itself; every request asks for the events after the last one
 * received (`Last-Event-ID`), so nothing is shown twice or missed. The stream is closed on
 * `run_complete` and `run_waiting` (the server ends it there); a 204 (nothing more to send)
 * ends it too. Returns the function that stops following.
 */
export function followRun(documentId: string, runId: string, options: FollowOptions): () => void {
  let last = options.after;
  let closed = false;
  const url = `${apiBase}/documents/${encodeURIComponent(documentId)}/runs/${encodeURIComponent(runId)}/events`;
  const source = new EventSource(url, {
    fetch: (input, init) => {
      const headers: Record<string, string> = { ...(init.headers as Record<string, string>), ...authHeaders() };
      // The last event this page has, whatever the connection before this one managed to send.
      headers['last-event-id'] = String(last);
      for (const key of Object.keys(headers)) if (key !== 'last-event-id' && key.toLowerCase() === 'last-event-id') delete headers[key];
      return fetch(input, { ...init, headers }).then(async (response) => {
        if (response.status === 401 || response.status === 403 || response.status === 404) {
          const error = await errorOf(response.clone());
          closed = true;
          options.onState('failed', `${error.status} ${error.code}: ${error.message}`);
        }
        return response;
      });
    },
  });
  const stop = () => {
    closed = true;
    source.close();
  };
  source.onopen = () => options.onState('open');
  source.onerror = () => {
    if (closed) return;
    if (source.readyState === EventSource.CLOSED) {
      closed = true;
      // 204: the run ended and every event was received.
      options.onState('ended');
    } else options.onState('reconnecting');
  };
  for (const type of eventTypes) {
    source.addEventListener(type, (message: MessageEvent<string>) => {
      const seq = Number(message.lastEventId);
      if (!Number.isFinite(seq) || seq <= last) return;
      last = seq;
      options.onEvent({ seq, type, data: JSON.parse(message.data) as Record<string, any> });
      if (type === 'run_complete' || type === 'run_waiting') {
        stop();
        options.onState('ended');
      }
    });
  }
  options.onState('connecting');
  return stop;
}

/**
 * POSTs a run request (`stream: true`, SSE) and reads the answer's events as they arrive
 * (eventsource-parser over the response body), until the stream ends or `signal` aborts it.
 * Used for debug runs, which stream on their own response only, and to learn a new run's id
 * from its first event.
 */
export async function postRun(path: string, body: Record<string, unknown>, onEvent: (event: RunEvent) => boolean | void, signal?: AbortSignal): Promise<void> {
  const response = await fetch(`${apiBase}${path}`, {
    method: 'POST',
    headers: authHeaders({ 'content-type': 'application/json', accept: 'text/event-stream', 'idempotency-key': crypto.randomUUID() }),
    body: JSON.stringify({ ...body, stream: true, format: 'sse' }),
    signal,
  });
  if (!response.ok || !response.body) throw await errorOf(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      if (!value.event) continue;
      const stop = onEvent({ seq: Number(value.id), type: value.event, data: JSON.parse(value.data) as Record<string, any> });
      if (stop === true) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
