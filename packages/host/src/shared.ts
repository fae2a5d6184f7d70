/** Small pieces both transports share. */

export const JSON_TYPE = 'application/json; charset=utf-8';

export const internalErrorBody = '{"error":"internal_error","message":"An internal error occurred."}';

/**
 * A WebSocket whose unsent data passes this many bytes is closed: a peer that stopped reading
 * must not grow the server's memory without bound, and silently dropping messages would break
 * the protocols on top (JSON-RPC, Yjs).
 */
export const SLOW_SOCKET_LIMIT_BYTES = 16 * 1024 * 1024;

/** Above this many queued bytes a socket counts as slow: `SocketLike.send` returns false. */
export const SLOW_SOCKET_BYTES = 1024 * 1024;

/** A WebSocket that has sent nothing (not even a pong) for this long is closed. */
export const WS_IDLE_TIMEOUT_S = 120;

/**
 * The size at which the socket library itself gives up on a message. Between a channel's limit
 * and this ceiling the transport closes with 1009 (message too big); past it uWS drops the
 * connection without a close frame rather than buffer an arbitrarily large message.
 */
export function wsPayloadCeiling(limit: number): number {
  return Math.min(Math.max(limit * 2, limit + 64 * 1024), 1024 * 1024 * 1024);
}

export function toBuffer(value: string | Uint8Array): Buffer {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * The "client went away" signal of one request, created only when something reads it: most
 * requests never do, and an AbortController per request is a measurable cost on the hot path.
 */
export class LazyAbort {
  private controller: AbortController | undefined;
  private done = false;

  get aborted(): boolean {
    return this.done;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.done) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    if (this.done) return;
    this.done = true;
    this.controller?.abort();
  }
}


/**
 * A KernelRequest as the transports build it. A class, not an object literal: a literal with a
 * getter (for the lazy `signal`) costs about a kilobyte and a microsecond per request.
 */
export class TransportRequest {
  body: Uint8Array | undefined = undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Record<string, string>,
    readonly remoteAddress: string,
    private readonly abort: LazyAbort,
  ) {}

  get signal(): AbortSignal {
    return this.abort.signal;
  }
}
