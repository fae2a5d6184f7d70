/** The part of the WHATWG WebSocket API the channel uses (the global `WebSocket`, or `ws`'s). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: any) => void): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface UserChannelOptions {
  /** `ws://` or `wss://` address of the server (with its base path). */
  url: string;
  token: string | (() => string);
  /** A WebSocket class; default the global one (Node 22+, browsers). On Node 20 pass `ws`'s. */
  WebSocket?: WebSocketConstructor;
  /** First wait before reconnecting, doubled up to 10 s (default 250 ms). */
  reconnectDelayMs?: number;
  /** Reconnect after a lost connection (default true). */
  reconnect?: boolean;
}

/** A push of the server (JSON-RPC notification) with its sequence number when it has one. */
export interface Push {
  method: string;
  params: Record<string, any>;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** A JSON-RPC error answer of the channel. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * The user channel (`/v3/wss`, docs/http/websocket.md): JSON-RPC calls, and the server's pushes
 * delivered once each and in order across reconnections. After a lost connection it reconnects by
 * itself and authenticates with the `epoch` and `lastSeq` it saw, so the server replays the pushes
 * it missed; when the server cannot (`resync_required`), `onResync` listeners are told to reload
 * their state over HTTP. Calls in flight when the connection drops are rejected.
 */
export class UserChannel {
  epoch: string | undefined;
  lastSeq = 0;
  private socket: WebSocketLike | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Map<string, Set<(params: Record<string, any>) => void>>();
  private readonly resyncListeners = new Set<(reason: string) => void>();
  private closed = false;
  private failures = 0;
  private opening: Promise<void> | undefined;

  constructor(private readonly options: UserChannelOptions) {}

  /** Opens and authenticates the channel (resolves once authenticated). */
  connect(): Promise<void> {
    this.closed = false;
    return (this.opening ??= this.open().finally(() => (this.opening = undefined)));
  }

  /** Listens to one push method (`conversation`, `system`, `status`, ...); returns the unsubscribe. */
  on(method: string, listener: (params: Record<string, any>) => void): () => void {
    let set = this.listeners.get(method);
    if (!set) this.listeners.set(method, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Told when pushes were lost for good (`resync_required`): reload what they carried over HTTP. */
  onResync(listener: (reason: string) => void): () => void {
    this.resyncListeners.add(listener);
    return () => this.resyncListeners.delete(listener);
  }

  /** Calls a method of the channel. */
  call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const socket = this.socket;
    if (!socket || socket.readyState !== 1) return Promise.reject(new Error('The user channel is not connected.'));
    return this.request(socket, method, params) as Promise<T>;
  }

  /** Closes for good (no reconnection). */
  close(): void {
    this.closed = true;
    this.socket?.close(1000);
    this.socket = undefined;
  }

  /** The socket in use (tests drop it to see the channel resume). */
  get connection(): WebSocketLike | undefined {
    return this.socket;
  }

  private token(): string {
    return typeof this.options.token === 'function' ? this.options.token() : this.options.token;
  }

  private async open(): Promise<void> {
    const Impl = this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!Impl) throw new Error('No WebSocket class: pass one (for example `ws`) as options.WebSocket.');
    const socket = new Impl(`${this.options.url.replace(/\/+$/, '')}/v3/wss?token=${encodeURIComponent(this.token())}`);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve());
      socket.addEventListener('error', (event) => reject(event?.error ?? new Error('The user channel could not connect.')));
    });
    socket.addEventListener('message', (event) => this.receive(String(event.data)));
    socket.addEventListener('close', () => this.lost(socket));
    this.socket = socket;
    const resume = this.epoch ? { epoch: this.epoch, lastSeq: this.lastSeq } : {};
    let result: { epoch: string; seq: number };
    try {
      result = (await this.request(socket, 'auth', { token: this.token(), ...resume })) as { epoch: string; seq: number };
    } catch (error) {
      this.socket = undefined;
      socket.close(1000);
      throw error;
    }
    // A fresh numbering: the pushes that follow count from the result's seq.
    if (!this.epoch || result.epoch !== this.epoch) this.lastSeq = result.seq;
    this.epoch = result.epoch;
    this.failures = 0;
  }

  private request(socket: WebSocketLike, method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  private receive(text: string): void {
    let message: { id?: number; result?: unknown; error?: { code: number; message: string; data?: unknown }; method?: string; params?: Record<string, any> };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (message.id !== undefined && message.id !== null && !message.method) {
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) pending?.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else pending?.resolve(message.result);
      return;
    }
    if (!message.method) return;
    const params = message.params ?? {};
    if (message.method === 'resync_required') {
      this.epoch = params.epoch;
      this.lastSeq = params.seq ?? 0;
      for (const listener of this.resyncListeners) listener(String(params.reason));
      return;
    }
    if (typeof params.seq === 'number') {
      if (params.seq <= this.lastSeq) return; // already delivered before a reconnection
      this.lastSeq = params.seq;
    }
    for (const listener of this.listeners.get(message.method) ?? []) listener(params);
  }

  private lost(socket: WebSocketLike): void {
    if (this.socket !== socket) return;
    this.socket = undefined;
    for (const pending of this.pending.values()) pending.reject(new Error('The user channel lost its connection.'));
    this.pending.clear();
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.options.reconnect === false) return;
    const delay = Math.min(10_000, (this.options.reconnectDelayMs ?? 250) * 2 ** this.failures++);
    setTimeout(() => {
      if (this.closed) return;
      this.connect().catch(() => {
        if (!this.socket) this.schedule();
      });
    }, delay);
  }
}
