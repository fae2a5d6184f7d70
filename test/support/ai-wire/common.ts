import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a wire server received, recorded in arrival order. */
export interface WireRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (`undefined` when there was none or it was not JSON). */
  body: any;
  /** The raw body text. */
  rawBody: string;
}

/** An HTTP error answer: the status, the vendor's error message and extra headers (`retry-after`). */
export interface WireErrorReply {
  status: number;
  message?: string;
  /** Vendor error type/code where the format has one (OpenAI `type`, Anthropic `error.type`, ...). */
  type?: string;
  code?: string;
  headers?: Record<string, string>;
}

/** How a streamed answer is delivered. */
export interface WireStreamControl {
  /** Milliseconds between two SSE frames (default 0). */
  delayMs?: number;
  /**
   * Destroys the socket after this many content frames (deltas; counted after the vendor's
   * opening frames such as OpenAI's role chunk or Anthropic's `message_start`): a stream cut in
   * the middle, without the final frames.
   */
  cutAfter?: number;
  /**
   * Stops sending after this many content frames (counted like `cutAfter`) and keeps the
   * connection open until the client goes away (for abort tests). `held()` resolves when the
   * server reached that point.
   */
  holdAfter?: number;
  /**
   * Pauses after this many content frames (counted like `cutAfter`) until `resume` settles, then
   * sends the rest: a stream sure to be still going when the test says so, however slow the
   * machine. `held()` counts the pause like a hold.
   */
  pauseAfter?: number;
  resume?: Promise<unknown>;
}

/** A tool call the model makes: its arguments (JSON text) are streamed as the given fragments. */
export interface WireToolCall {
  id?: string;
  name: string;
  /** JSON text of the arguments, split across chunks (a string is split in three). */
  arguments: string | string[];
}

/**
 * One model answer, in vendor-neutral terms: every wire server (OpenAI, Anthropic, Gemini, Dify)
 * renders it in its own format, streamed when the request asks for a stream.
 */
export interface WireTurn extends WireStreamControl {
  /** Text deltas, one chunk each. */
  text?: string[];
  toolCalls?: WireToolCall[];
  /** Reported usage. Default: counted roughly from the request and the answer; `null`: none reported. */
  usage?: { inputTokens: number; outputTokens: number } | null;
  /** The vendor's finish reason (`stop`, `length`, `tool_calls`, `end_turn`, `STOP`, ...). Default: the vendor's for text or tool calls. */
  finishReason?: string;
  /**
   * An error event sent after the text deltas instead of the end of the answer, in the vendor's
   * format (OpenAI `data: {error}`, Anthropic `event: error`, Dify `event: error`; the Gemini
   * server ignores it).
   */
  streamError?: { status: number; type?: string; code?: string; message: string };
}

/** An embeddings answer (default: deterministic 8-dimension vectors of each input). */
export interface WireEmbeddings {
  embeddings: number[][];
  usage?: { inputTokens: number };
}

/** What a wire server answers to one request. */
export type WireReply = WireTurn | WireEmbeddings | { error: WireErrorReply };

export const isWireError = (reply: WireReply): reply is { error: WireErrorReply } => 'error' in reply;
export const isWireEmbeddings = (reply: WireReply): reply is WireEmbeddings => 'embeddings' in reply;

/** Argument fragments of a tool call (a string is split in three). */
export const argumentFragments = (call: WireToolCall): string[] => (typeof call.arguments === 'string' ? splitInto(call.arguments, 3) : call.arguments);

/** The surface every vendor wire server offers (for suites that run against all of them). */
export interface AiWireServer {
  readonly url: string;
  readonly requests: WireRequest[];
  /** The model requests (chat / messages / generate / chat-messages), in order. */
  readonly chatRequests: WireRequest[];
  enqueue(...replies: Array<WireScript<WireReply>>): this;
  reset(): this;
  held(n?: number): Promise<void>;
  /** Streamed answers still being sent or held open. */
  readonly activeStreams: number;
  close(): Promise<void>;
}

/** A scripted reply, or a function computing it from the request. */
export type WireScript<Reply> = Reply | ((request: WireRequest) => Reply);

/**
 * The shared machinery of the vendor wire servers: an HTTP server on 127.0.0.1 and an ephemeral
 * port, a FIFO queue of scripted replies (one per model request), and the record of requests.
 */
export abstract class WireServerBase<Reply> {
  /** Every request received, in order (including the refused ones). */
  readonly requests: WireRequest[] = [];
  private readonly queue: Array<WireScript<Reply>> = [];
  private server: Server | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();
  private heldWaiters: Array<{ n: number; resolve: () => void }> = [];
  private heldCount = 0;

  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url = '';
  /** Streamed answers still being sent or held open (0 once every client went away or got its end). */
  activeStreams = 0;

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      void this.receive(req, res).catch((error: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(error));
        } else res.destroy();
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Queues replies for the next model requests, in order. */
  enqueue(...replies: Array<WireScript<Reply>>): this {
    this.queue.push(...replies);
    return this;
  }

  /** Forgets queued replies, recorded requests and the count of held streams. */
  reset(): this {
    this.queue.length = 0;
    this.requests.length = 0;
    this.heldCount = 0;
    return this;
  }

  /** Scripted replies not consumed yet. */
  get pending(): number {
    return this.queue.length;
  }

  /** Resolves once `n` streams (default 1) reached their `holdAfter` (or `pauseAfter`) point since the start or the last `reset()`. */
  held(n = 1): Promise<void> {
    if (this.heldCount >= n) return Promise.resolve();
    return new Promise((resolve) => this.heldWaiters.push({ n, resolve }));
  }

  /** The last recorded request whose path ends with `suffix`. */
  lastRequest(suffix = ''): WireRequest | undefined {
    return [...this.requests].reverse().find((request) => request.path.endsWith(suffix));
  }

  /** Takes the next scripted reply for `request`, or `undefined` when the queue is empty. */
  protected nextReply(request: WireRequest): Reply | undefined {
    const script = this.queue.shift();
    if (script === undefined) return undefined;
    return typeof script === 'function' ? (script as (request: WireRequest) => Reply)(request) : script;
  }

  protected abstract handle(request: WireRequest, res: ServerResponse, req: IncomingMessage): Promise<void>;

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      body = undefined;
    }
    const url = new URL(req.url ?? '/', 'http://wire.local');
    const request: WireRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body, rawBody };
    this.requests.push(request);
    await this.handle(request, res, req);
  }

  /** Sends a JSON answer. */
  protected json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  /**
   * Sends SSE frames (each already formatted, ending with a blank line) with the stream control:
   * delays, a cut (socket destroyed) or a hold (kept open until the client leaves).
   */
  protected async sse(req: IncomingMessage, res: ServerResponse, frames: string[], control: WireStreamControl = {}, headers: Record<string, string> = {}, lead = 0): Promise<void> {
    this.activeStreams += 1;
    try {
      await this.writeFrames(req, res, frames, control, headers, lead);
    } finally {
      this.activeStreams -= 1;
    }
  }

  private countHeld(): void {
    this.heldCount += 1;
    const ready = this.heldWaiters.filter((waiter) => waiter.n <= this.heldCount);
    this.heldWaiters = this.heldWaiters.filter((waiter) => waiter.n > this.heldCount);
    for (const waiter of ready) waiter.resolve();
  }

  private async writeFrames(req: IncomingMessage, res: ServerResponse, frames: string[], control: WireStreamControl, headers: Record<string, string>, lead: number): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
    let closed = false;
    res.on('close', () => {
      closed = true;
    });
    /** Settles when the response closes (the client went away). */
    const gone = () => new Promise<void>((resolve) => (closed ? resolve() : res.on('close', () => resolve())));
    for (let index = 0; index < frames.length; index += 1) {
      if (closed) return;
      if (control.cutAfter !== undefined && index >= lead + control.cutAfter) {
        // Let what was written reach the client, then drop the connection mid-body.
        await new Promise((resolve) => setTimeout(resolve, 30));
        res.socket?.destroy();
        return;
      }
      if (control.holdAfter !== undefined && index >= lead + control.holdAfter) {
        this.countHeld();
        await new Promise<void>((resolve) => {
          if (closed) resolve();
          else res.on('close', () => resolve());
          req.on('close', () => resolve());
        });
        return;
      }
      if (control.pauseAfter !== undefined && index === lead + control.pauseAfter) {
        this.countHeld();
        await Promise.race([control.resume, gone()]);
        if (closed) return;
      }
      await new Promise<void>((resolve) => res.write(frames[index], () => resolve()));
      if (control.delayMs) await new Promise((resolve) => setTimeout(resolve, control.delayMs));
    }
    res.end();
  }
}

/** `data: <json>\n\n` (the OpenAI and Gemini framing). */
export const dataFrame = (payload: unknown): string => `data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`;

/** `event: <name>\ndata: <json>\n\n` (the Anthropic framing). */
export const eventFrame = (event: string, payload: unknown): string => `event: ${event}\ndata: ${JSON.stringify(payload)}\n\n`;

/** A rough token count for echo replies and default usage (words and punctuation). */
export const roughTokens = (text: string): number => Math.max(1, (text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) ?? []).length);

/** A deterministic embedding of `text` (8 dimensions from its characters), for default replies. */
export const wireEmbedding = (text: string, dimensions = 8): number[] => {
  const vector = new Array<number>(dimensions).fill(0);
  for (let index = 0; index < text.length; index += 1) vector[index % dimensions] += text.charCodeAt(index) / 1000;
  return vector.map((value) => Math.round(value * 1e6) / 1e6);
};

/** Splits `text` into `parts` pieces of about equal length (for streamed deltas and arguments). */
export const splitInto = (text: string, parts: number): string[] => {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const pieces: string[] = [];
  for (let index = 0; index < text.length; index += size) pieces.push(text.slice(index, index + size));
  return pieces.length ? pieces : [''];
};
