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

  /** The first message (already received or still to come) that matches. */
  next<T = any>(match: (message: any) => boolean = () => true, timeoutMs = 15_000): Promise<T> {
    const index = this.inbox.findIndex(match);
    if (index >= 0) return Promise.resolve(this.inbox.splice(index, 1)[0] as T);
    return new Promise<T>((resolve, reject) => {
      const waiter = { match, resolve };
      this.waiters.push(waiter);
      setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) {
          this.waiters.splice(at, 1);
          reject(new Error(`no matching message within ${timeoutMs} ms; inbox: ${JSON.stringify(this.inbox)}`));
        }
      }, timeoutMs).unref();
    });
  }

  /** Sends a request and waits for the response with its id. */
  request(method: string, params?: unknown): Promise<any> {
    const id = this.nextId++;
    this.send({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }), id });
    return this.next((m) => !Array.isArray(m) && m.id === id);
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

/** An open rpc-websockets client (no automatic reconnect unless asked). */
export async function openRpcClient(url: string, options: { reconnect?: boolean; reconnect_interval?: number; max_reconnects?: number } = {}): Promise<RpcClient> {
  const client = new CommonClient(queuedAckSocket, url, { autoconnect: true, reconnect: false, ...options });
  await new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('error', (error: unknown) => reject(error));
  });
  return client;
}

/** Waits for the next `method` notification an rpc-websockets client receives. */
export function nextEvent<T = any>(client: RpcClient, method: string, timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${method} notification within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    client.once(method, (params: T) => {
      clearTimeout(timer);
      resolve(params);
    });
  });
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
