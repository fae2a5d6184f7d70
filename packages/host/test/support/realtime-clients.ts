import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import type { ChannelTarget, ChannelTargetResolver, HardwareMessage, HardwareMessageSink } from '@trellis/core';
import { CommonClient, type ICommonWebSocketFactory } from 'rpc-websockets';
import WebSocket from 'ws';

/** A plain `ws` client that keeps every message it receives, for protocol-level assertions. */
export class WsProbe {
  private readonly inbox: unknown[] = [];
  private readonly waiters: Array<{ match: (m: any) => boolean; resolve: (m: any) => void }> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private nextId = 1;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as unknown;
      const index = this.waiters.findIndex((w) => w.match(message));
      if (index >= 0) this.waiters.splice(index, 1)[0]!.resolve(message);
      else this.inbox.push(message);
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  /** Opens a socket; rejects with `{ status, body }` when the upgrade is refused. */
  static open(url: string): Promise<WsProbe> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const probe = new WsProbe(ws);
      ws.once('open', () => resolve(probe));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => reject(Object.assign(new Error(`upgrade refused with ${res.statusCode}`), { status: res.statusCode, body })));
      });
      ws.once('error', (error) => reject(error));
    });
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The first message (already received or still to come) that matches; `what` names it in failures. */
  next<T = any>(match: (message: any) => boolean = () => true, timeoutMs = 15_000, what = 'a matching message'): Promise<T> {
    const index = this.inbox.findIndex(match);
    if (index >= 0) return Promise.resolve(this.inbox.splice(index, 1)[0] as T);
    return new Promise<T>((resolve, reject) => {
      const waiter = { match, resolve };
      this.waiters.push(waiter);
      const give = (why: string) => {
        const at = this.waiters.indexOf(waiter);
        if (at < 0) return;
        this.waiters.splice(at, 1);
        reject(new Error(`${why}; inbox: ${JSON.stringify(this.inbox)}`));
      };
      setTimeout(() => give(`${what} did not arrive within ${timeoutMs} ms`), timeoutMs).unref();
      // A closed socket receives nothing more: say so at once, with its close code.
      void this.closed.then(({ code, reason }) => give(`the socket closed (code ${code}${reason ? `, reason "${reason}"` : ''}) before ${what}`));
    });
  }

  /** Sends a request and waits for the response with its id. */
  request(method: string, params?: unknown): Promise<any> {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }), id });
    return this.next((m) => !Array.isArray(m) && m.id === id, 15_000, `the answer to ${method}`);
  }

  notify(method: string, params?: unknown): void {
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) });
  }

  /** Messages received and not yet taken. */
  pending(): unknown[] {
    return [...this.inbox];
  }

  close(): void {
    this.ws.close();
  }
}

/**
 * rpc-websockets registers a pending call only in the send callback, which `ws` runs once the
 * frame reached the kernel. With client and server in one process (uWS answers inside the same
 * poll phase) the reply can arrive first and is then dropped. Across a network that cannot
 * happen; here the factory acknowledges a send as soon as `ws` has queued the frame, so the call
 * is registered before any reply can be read. Everything else is the library's own client.
 */
const queuedAckSocket: ICommonWebSocketFactory = (address, options) => {
  const ws = new WebSocket(address, options as WebSocket.ClientOptions);
  const send = ws.send.bind(ws);
  (ws as unknown as { send: (data: unknown, optionsOrCallback?: unknown, callback?: (error?: Error) => void) => void }).send = (data, optionsOrCallback, callback) => {
    const done = typeof optionsOrCallback === 'function' ? (optionsOrCallback as (error?: Error) => void) : callback;
    const sendOptions = typeof optionsOrCallback === 'object' && optionsOrCallback !== null ? optionsOrCallback : {};
    try {
      send(data as string, sendOptions);
    } catch (error) {
      done?.(error as Error);
      return;
    }
    done?.();
  };
  return ws as never;
};

export type RpcClient = CommonClient;

type CloseInfo = { code: number; reason: string };

/**
 * The `ws` socket under one client. CommonClient emits `close` only for a socket that had opened,
 * and rejects neither a pending `open` nor its pending calls when the socket closes: without this
 * a socket the server closes leaves the test waiting until vitest's own timeout, with no clue.
 */
class SocketWatch {
  lastClose?: CloseInfo;
  private readonly listeners = new Set<(info: CloseInfo) => void>();

  track(ws: WebSocket): void {
    this.lastClose = undefined;
    // What `ws` reports before a 1006 (a frame it refused, a reset connection) says why.
    let error: Error | undefined;
    ws.on('error', (e) => (error ??= e));
    ws.on('close', (code, reason) => {
      const info = { code, reason: reason.toString() || (error ? `error: ${error.message}` : '') };
      this.lastClose = info;
      for (const listener of [...this.listeners]) listener(info);
    });
  }

  /** Calls `listener` when the current socket closes (at once when it already has). */
  onClose(listener: (info: CloseInfo) => void): () => void {
    if (this.lastClose) {
      listener(this.lastClose);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

const watches = new WeakMap<CommonClient, SocketWatch>();

/**
 * `promise`, or a failure naming `step` when it takes longer than `timeoutMs` or when the client's
 * socket closes first (with the close code and reason).
 */
export function withDeadline<T>(step: string, promise: Promise<T>, client?: RpcClient, timeoutMs = 10_000): Promise<T> {
  const watch = client ? watches.get(client) : undefined;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new Error(`${step}: no answer within ${timeoutMs} ms`))), timeoutMs);
    timer.unref();
    const stopWatching = watch?.onClose(({ code, reason }) =>
      finish(() => reject(new Error(`${step}: the socket closed first (code ${code}${reason ? `, reason "${reason}"` : ''})`))),
    );
    let done = false;
    function finish(settle: () => void): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stopWatching?.();
      settle();
    }
    promise.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/** An open rpc-websockets client (no automatic reconnect unless asked). */
export async function openRpcClient(
  url: string,
  options: { reconnect?: boolean; reconnect_interval?: number; max_reconnects?: number } = {},
  timeoutMs = 10_000,
): Promise<RpcClient> {
  const watch = new SocketWatch();
  const factory: ICommonWebSocketFactory = (address, socketOptions) => {
    const ws = queuedAckSocket(address, socketOptions) as unknown as WebSocket;
    watch.track(ws);
    return ws as never;
  };
  const client = new CommonClient(factory, url, { autoconnect: true, reconnect: false, ...options });
  watches.set(client, watch);
  const opened = new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('error', (error: unknown) => reject(error));
  });
  try {
    await withDeadline(`opening ${new URL(url).pathname}`, opened, client, timeoutMs);
  } catch (error) {
    client.close();
    throw error;
  }
  return client;
}

/**
 * `client.call` with a deadline: fails naming the method when no answer comes within
 * `timeoutMs` or when the socket closes first (rpc-websockets itself would wait for ever).
 */
export function rpcCall<T = any>(client: RpcClient, method: string, params?: unknown, timeoutMs = 15_000): Promise<T> {
  return withDeadline(`call ${method}`, client.call(method, params as never) as Promise<T>, client, timeoutMs);
}

/** Waits for the next `method` notification an rpc-websockets client receives. */
export function nextEvent<T = any>(client: RpcClient, method: string, timeoutMs = 15_000): Promise<T> {
  let listener!: (params: T) => void;
  const received = new Promise<T>((resolve) => {
    listener = resolve;
    client.once(method, listener);
  });
  return withDeadline(`waiting for a ${method} notification`, received, client, timeoutMs).finally(() => client.off(method, listener));
}

/** What a rejected rpc-websockets call carries: the JSON-RPC error object. */
export async function rpcError(promise: Promise<unknown>): Promise<{ code: number; message: string; data?: any }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: number; message: string; data?: any };
  }
  throw new Error('expected the call to fail');
}

/**
 * Stand-ins for the module that owns applications and devices: a resolver over an in-memory
 * table and a sink that keeps what devices sent.
 */
export class TestTargets implements ChannelTargetResolver, HardwareMessageSink {
  private readonly targets = new Map<string, ChannelTarget>();
  readonly recorded: Array<{ hdId: string; message: HardwareMessage }> = [];

  add(kind: ChannelTarget['kind'], ownerId: string): string {
    const id = randomUUID();
    this.targets.set(id, { kind, id, ownerId });
    return id;
  }

  async resolve(_em: EntityManager, id: string): Promise<ChannelTarget | null> {
    return this.targets.get(id) ?? null;
  }

  async record(_em: EntityManager, hdId: string, message: HardwareMessage): Promise<void> {
    this.recorded.push({ hdId, message });
  }
}
