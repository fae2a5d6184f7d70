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
    const forever = request.messages.some((m) => m.role === 'user' && m.content.includes('forever'));
    if (request.tools?.length && ((last?.role === 'user' && /weather/i.test(last.content)) || forever)) {
      yield { type: 'tool-call', toolCallId: `call_${this.requests.length}`, toolName: request.tools[0]!.name, input: { city: 'Paris' } };
      yield { type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 1000, outputTokens: 100 } };
      return;
    }
    const text = last?.role === 'tool' ? `Forecast: ${last.content}` : `Echo: ${last?.content ?? ''}`;
    const slow = /slow/.test(text);
    for (const piece of text.match(/[\s\S]{1,4}/g) ?? []) {
      if (slow) await new Promise((resolve) => setTimeout(resolve, 100));
      request.signal?.throwIfAborted();
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

/**
 * A user-channel socket (plain `ws`) that authenticates and collects `conversation` notifications.
 * Like a real client it sends a `ping` every `pingMs` (default 30 s, as docs/http/websocket.md asks):
 * the server closes a socket from which nothing arrived for `realtime.heartbeatTimeoutMs` (90 s) with
 * 4408, and a silent test socket older than that got nothing more (0: no pings, to test that).
 */
export class UserSocket {
  readonly notes: ConversationNote[] = [];
  private waiters: Array<() => void> = [];
  private pinger?: NodeJS.Timeout;

  /** The `auth` result: `epoch` and `seq` to resume from. */
  auth: { epoch: string; seq: number } = { epoch: '', seq: 0 };
  /** How the socket closed, once it did. */
  closed: { code: number; reason: string } | null = null;
  /** Settles once the socket closed. */
  readonly whenClosed: Promise<{ code: number; reason: string }>;

  private constructor(private readonly ws: WebSocket) {
    this.whenClosed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        clearInterval(this.pinger);
        this.closed = { code, reason: String(reason) };
        resolve(this.closed);
        for (const wake of this.waiters.splice(0)) wake();
      }),
    );
    ws.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.method === 'conversation') {
        this.notes.push(message.params);
        for (const wake of this.waiters.splice(0)) wake();
      }
    });
  }

  static async open(wsUrl: string, token: string, resume?: { epoch: string; lastSeq: number }, options: { pingMs?: number } = {}): Promise<UserSocket> {
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
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'auth', params: { token, ...resume } }));
    const reply = await authed;
    if (reply.result?.status !== 'authenticated') throw new Error(`auth failed: ${JSON.stringify(reply)}`);
    socket.auth = { epoch: reply.result.epoch, seq: reply.result.seq };
    const pingMs = options.pingMs ?? 30_000;
    if (pingMs > 0 && !socket.closed) {
      // A notification: no answer to skip.
      socket.pinger = setInterval(() => ws.readyState === ws.OPEN && ws.send('{"jsonrpc":"2.0","method":"ping"}'), pingMs);
      socket.pinger.unref();
    }
    return socket;
  }

  /** Waits until a notification matches, and returns the notifications of that message so far. */
  async until(predicate: (note: ConversationNote) => boolean, timeoutMs = 15_000): Promise<ConversationNote> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.notes.find(predicate);
      if (found) return found;
      // A closed socket gets nothing more: say why instead of waiting out the deadline.
      if (this.closed) throw new Error(`the socket closed (${this.closed.code} ${this.closed.reason}); got ${JSON.stringify(this.notes.map((n) => n.type))}`);
      if (Date.now() > deadline) throw new Error(`no matching notification; got ${JSON.stringify(this.notes.map((n) => n.type))}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  close(): void {
    clearInterval(this.pinger);
    this.ws.close();
  }
}
