import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { aiErrors, type AiChatRequest, type AiProvider, type AiStreamPart } from '@trellis/core';

/**
 * A provider adapter written in the test against the port: answers `Echo: <last user text>` in
 * 4-character deltas; when tools are offered and the last user message mentions the weather it
 * calls the first tool with `{ city: 'Paris' }`; after a tool result it answers `Forecast: <result>`.
 * It refuses any API key but `sk-right`, which proves the gateway decrypts the stored key.
 */
export class ScriptedProvider implements AiProvider<{ model: string; apiKey?: string }> {
  readonly service = 'scripted';
  readonly requests: AiChatRequest[] = [];

  parseConf(conf: Record<string, unknown>) {
    if (typeof conf.model !== 'string' || conf.model.length === 0) {
      throw aiErrors.invalidConf([{ field: 'conf.model', constraint: 'isString', message: 'model names the model to call.' }]);
    }
    return { model: conf.model, apiKey: typeof conf.apiKey === 'string' ? conf.apiKey : undefined };
  }

  async *chat(conf: { model: string; apiKey?: string }, request: AiChatRequest): AsyncIterable<AiStreamPart> {
    this.requests.push({ ...request, signal: undefined });
    if (conf.apiKey !== 'sk-right') throw aiErrors.authFailed();
    const last = request.messages.at(-1);
    if (request.tools?.length && last?.role === 'user' && /weather/i.test(last.content)) {
      yield { type: 'tool-call', toolCallId: `call_${this.requests.length}`, toolName: request.tools[0]!.name, input: { city: 'Paris' } };
      yield { type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 1000, outputTokens: 100 } };
      return;
    }
    const text = last?.role === 'tool' ? `Forecast: ${last.content}` : `Echo: ${last?.content ?? ''}`;
    for (const piece of text.match(/[\s\S]{1,4}/g) ?? []) {
      yield { type: 'text-delta', delta: piece };
    }
    yield { type: 'finish', finishReason: 'stop', usage: { inputTokens: 2000, outputTokens: 500 } };
  }
}

/** A local HTTP API for `http` tool actions: `GET /weather?city=` answers `{ data: { city, sky } }`. */
export async function startWeatherServer(): Promise<{ url: string; requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }>; close(): Promise<void> }> {
  const requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/weather') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ data: { city: url.searchParams.get('city'), sky: 'sunny' } }));
      } else if (url.pathname === '/echo') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ received: body ? JSON.parse(body) : null, auth: req.headers['x-token'] ?? null }));
      } else {
        res.statusCode = 500;
        res.end('broken');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface ConversationNote {
  convId: string;
  msgId: string;
  type: string;
  content: any;
  seq: number;
}

/** A user-channel socket (plain `ws`) that authenticates and collects `conversation` notifications. */
export class UserSocket {
  readonly notes: ConversationNote[] = [];
  private waiters: Array<() => void> = [];

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.method === 'conversation') {
        this.notes.push(message.params);
        for (const wake of this.waiters.splice(0)) wake();
      }
    });
  }

  static async open(wsUrl: string, token: string): Promise<UserSocket> {
    const ws = new WebSocket(`${wsUrl}/v3/wss?token=${encodeURIComponent(token)}`);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const socket = new UserSocket(ws);
    const authed = new Promise<any>((resolve) => {
      const onMessage = (data: WebSocket.RawData) => {
        const message = JSON.parse(String(data));
        if (message.id === 1) {
          ws.off('message', onMessage);
          resolve(message);
        }
      };
      ws.on('message', onMessage);
    });
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'auth', params: { token } }));
    const reply = await authed;
    if (reply.result?.status !== 'authenticated') throw new Error(`auth failed: ${JSON.stringify(reply)}`);
    return socket;
  }

  /** Waits until a notification matches, and returns the notifications of that message so far. */
  async until(predicate: (note: ConversationNote) => boolean, timeoutMs = 15_000): Promise<ConversationNote> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notes.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching notification; got ${JSON.stringify(this.notes.map((n) => n.type))}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}
