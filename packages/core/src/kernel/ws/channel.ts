import type { Logger } from 'pino';

/** What the kernel needs of a WebSocket: the host wraps uWS or `ws` sockets in this. */
export interface SocketLike {
  /** Returns false when the message was buffered because the peer reads slowly. */
  send(data: string | Uint8Array, isBinary?: boolean): boolean;
  close(code?: number, reason?: string): void;
  /** Bytes queued for this socket and not yet written. */
  readonly bufferedAmount: number;
  /**
   * Optional: runs `callback` with its sends joined into one write (uWS `cork`). Transports
   * without it send each message on its own; callers fall back to calling `callback()`.
   */
  cork?(callback: () => void): void;
  readonly remoteAddress: string;
}

export interface ChannelUpgradeRequest {
  /** Path as routed (without base path). */
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: Record<string, string>;
  remoteAddress: string;
}

export interface ChannelSession {
  onMessage(data: string | Uint8Array, isBinary: boolean): void;
  onClose(code: number, reason: string): void;
  /** The socket's send buffer emptied after back-pressure. */
  onDrain?(): void;
}

export interface ChannelContext {
  log: Logger;
  get<T>(id: import('inversify').ServiceIdentifier<T>): T;
}

/**
 * A WebSocket endpoint declared by a module. `accept` runs before the upgrade: it may refuse by
 * throwing a TrellisError (the client gets that HTTP status), or return the function that builds
 * the session once the socket is open.
 */
export interface ChannelDefinition {
  name: string;
  /** `/v3/wss` or `/v3/wss/:id`. */
  path: string;
  /** Largest accepted message in bytes (default 1 MiB); larger ones close the socket with 1009. */
  maxPayloadBytes?: number;
  accept(request: ChannelUpgradeRequest, context: ChannelContext): Promise<AcceptedChannel> | AcceptedChannel;
}

/**
 * What `accept` answers: the function that builds the session, or that function with a smaller
 * message limit for this connection (a read-only client, say), at most the channel's own.
 */
export type AcceptedChannel = ((socket: SocketLike) => ChannelSession) | { open(socket: SocketLike): ChannelSession; maxPayloadBytes?: number };

export function defineChannel(channel: ChannelDefinition): ChannelDefinition {
  return channel;
}
