import { EventSource } from 'eventsource';
import { TrellisError, type AiChatRequest, type AiGateway, type AiStreamPart, type AiToolDefinition, type AiUsage } from '@trellis/core';

/** One run event as a client read it: SSE (id, event, data) or NDJSON (seq, type, fields), in one shape. */
export interface ReadEvent {
  seq: number;
  type: string;
  data: Record<string, any>;
}

export const runEventTypes = ['run_start', 'block_start', 'block_chunk', 'block_complete', 'block_end', 'block_error', 'tool_start', 'tool_result', 'run_waiting', 'run_error', 'run_complete'] as const;

const isEnd = (event: ReadEvent, untilComplete: boolean) => event.type === 'run_complete' || (!untilComplete && event.type === 'run_waiting');

/**
 * Reads a run's SSE stream with the `eventsource` client (POST through its `fetch` option when
 * `body` is given), until run_complete or run_waiting, or until `stopAfter` events (then it
 * disconnects, like a dropped connection). `untilComplete`: a run_waiting does not end the read
 * (the log of a run that waited and went on: a read that stops at its run_waiting keeps whatever
 * later events arrived in the same network read, which is not all of them when the log comes in
 * several reads).
 */
export function readSse(url: string, options: { token: string; body?: unknown; lastEventId?: number; stopAfter?: number; untilComplete?: boolean }): Promise<{ events: ReadEvent[]; status: number; contentType: string | null }> {
  return new Promise((resolve, reject) => {
    const events: ReadEvent[] = [];
    let status = 0;
    let contentType: string | null = null;
    const source = new EventSource(url, {
      fetch: async (input, init) => {
        const headers: Record<string, string> = { ...(init.headers as Record<string, string>), authorization: `Bearer ${options.token}` };
        if (options.lastEventId !== undefined) headers['last-event-id'] = String(options.lastEventId);
        const response = await fetch(input, {
          ...init,
          headers: options.body !== undefined ? { ...headers, 'content-type': 'application/json' } : headers,
          ...(options.body !== undefined ? { method: 'POST', body: JSON.stringify(options.body) } : {}),
        });
        status = response.status;
        contentType = response.headers.get('content-type');
        return response;
      },
    });
    const done = () => {
      source.close();
      resolve({ events, status, contentType });
    };
    for (const type of runEventTypes) {
      source.addEventListener(type, (message) => {
        const event = { seq: Number(message.lastEventId), type, data: JSON.parse(message.data) };
        events.push(event);
        if (isEnd(event, options.untilComplete === true) || (options.stopAfter !== undefined && events.length >= options.stopAfter)) done();
      });
    }
    source.onerror = (error) => {
      source.close();
      if (status && status !== 200) resolve({ events, status, contentType });
      else reject(new Error(`EventSource failed: ${String((error as { message?: string }).message ?? error)}`));
    };
  });
}

/**
 * Reads NDJSON lines as they arrive until the body ends (or `stopAfter` lines, then aborts the
 * request: a dropped connection).
 */
export async function readNdjson(url: string, init: { method?: string; token: string; body?: unknown; headers?: Record<string, string>; stopAfter?: number }): Promise<{ events: ReadEvent[]; status: number; contentType: string | null; text?: string }> {
  const abort = new AbortController();
  const response = await fetch(url, {
    method: init.method ?? 'POST',
    headers: { authorization: `Bearer ${init.token}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: abort.signal,
  });
  const contentType = response.headers.get('content-type');
  if (response.status !== 200 || !contentType?.startsWith('application/x-ndjson')) return { events: [], status: response.status, contentType, text: await response.text() };
  const events: ReadEvent[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        const { seq, type, ...data } = JSON.parse(line) as { seq: number; type: string };
        events.push({ seq, type, data });
        if (init.stopAfter !== undefined && events.length >= init.stopAfter) {
          abort.abort();
          return { events, status: response.status, contentType };
        }
      }
    }
  } catch (error) {
    if (!abort.signal.aborted) throw error;
  }
  if (buffered.trim()) throw new Error(`NDJSON ended inside a line: ${buffered}`);
  return { events, status: response.status, contentType };
}

/**
 * An AiGateway for tests, written against the contract (the ai module's real gateway replaces it
 * once merged). Models by id:
 * - `echo`: streams "Echo: " and the prompt word by word; usage = words in and out.
 * - `tooler`: with tools offered, first calls the first tool with `{ q: prompt }`, then says
 *   "done: <tool result>".
 * - `slow`: 30 chunks "tick N " 40 ms apart.
 * - `hang`: streams nothing until its signal aborts.
 */
export class ScriptedGateway implements AiGateway {
  readonly requests: AiChatRequest[] = [];
  aborts = 0;

  /** `aliases` answers one model id as another (a host that "fixed" a model). */
  constructor(private readonly aliases: Record<string, string> = {}) {}

  async *chat(input: { userId: string; modelId: string; request: AiChatRequest }): AsyncIterable<AiStreamPart> {
    const modelId = this.aliases[input.modelId] ?? input.modelId;
    const { request } = input;
    this.requests.push(request);
    const last = request.messages.at(-1)!;
    const prompt = request.messages.find((m) => m.role === 'user')?.content ?? '';
    const words = prompt.split(/\s+/).filter(Boolean);
    const usage: AiUsage = { inputTokens: words.length, outputTokens: 0 };
    const wait = (ms: number) =>
      new Promise<void>((resolve, reject) => {
        if (request.signal?.aborted) {
          this.aborts++;
          return reject(request.signal.reason ?? new Error('aborted'));
        }
        const onAbort = () => {
          clearTimeout(timer);
          this.aborts++;
          reject(request.signal!.reason ?? new Error('aborted'));
        };
        // A wait that ends takes its listener with it: a 'slow' stream waits 30 times on one signal.
        const timer = setTimeout(() => {
          request.signal?.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        request.signal?.addEventListener('abort', onAbort, { once: true });
      });
    switch (modelId) {
      case 'echo': {
        for (const word of ['Echo:', ...words]) {
          usage.outputTokens++;
          yield { type: 'text-delta', delta: `${word} ` };
        }
        break;
      }
      case 'tooler': {
        if (last.role === 'user' && request.tools?.length) {
          yield { type: 'tool-call', toolCallId: 'call-1', toolName: request.tools[0]!.name, input: { q: prompt } };
          yield { type: 'finish', finishReason: 'tool-calls', usage };
          return;
        }
        const text = `done: ${last.role === 'tool' ? last.content : 'no tool'}`;
        usage.outputTokens = 2;
        yield { type: 'text-delta', delta: text };
        break;
      }
      case 'slow': {
        for (let i = 0; i < 30; i++) {
          await wait(40);
          usage.outputTokens++;
          yield { type: 'text-delta', delta: `tick ${i} ` };
        }
        break;
      }
      case 'hang': {
        await wait(3_600_000);
        break;
      }
      default:
        throw new TrellisError('not_found', 'model_not_found', `No AI model ${modelId}.`);
    }
    yield { type: 'finish', finishReason: 'stop', usage };
  }

  async price(_modelId: string, usage: AiUsage): Promise<number> {
    return Math.ceil((usage.inputTokens + usage.outputTokens) / 10);
  }

  async estimate(): Promise<number> {
    return 5;
  }

  async toolDefinitions(input: { userId: string; toolIds: readonly string[] }): Promise<AiToolDefinition[]> {
    return input.toolIds.map((id) => ({ name: `${id}_lookup`, description: `Looks up ${id}`, parameters: { type: 'object', properties: { q: { type: 'string' } } } }));
  }

  async callTool(input: { userId: string; toolIds: readonly string[]; toolName: string; args: unknown }): Promise<unknown> {
    if (input.toolName.includes('broken')) throw new TrellisError('unavailable', 'tool_unavailable', 'The tool service is down.');
    return { tool: input.toolName, args: input.args };
  }
}
