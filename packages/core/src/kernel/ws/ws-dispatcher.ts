import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import { TrellisError, toTrellisError } from '../errors.js';
import { Router } from '../http/router.js';
import type { KernelResponse } from '../http/types.js';
import type { TrellisMetrics } from '../observability/metrics.js';
import type { ChannelDefinition, ChannelSession, ChannelUpgradeRequest, SocketLike } from './channel.js';

export interface UpgradeInput {
  /** Full path as received (the dispatcher strips the base path). */
  path: string;
  query: string;
  headers: Record<string, string>;
  remoteAddress: string;
}

export type UpgradeDecision =
  | { ok: true; channel: ChannelDefinition; maxPayloadBytes: number; open(socket: SocketLike): ChannelSession }
  | { ok: false; response: KernelResponse };

const DEFAULT_MAX_PAYLOAD = 1_048_576;

/**
 * Transport-free WebSocket routing: finds the channel for a path, lets it accept or refuse the
 * upgrade, and hands the transport a session to feed with messages. Tracks open sockets so a
 * graceful stop can close them.
 */
export class WsDispatcher {
  private readonly router = new Router<ChannelDefinition>();
  private readonly open = new Set<SocketLike>();

  constructor(
    channels: readonly ChannelDefinition[],
    private readonly basePath: string,
    private readonly log: Logger,
    private readonly get: <T>(id: ServiceIdentifier<T>) => T,
    private readonly isReady: () => boolean,
    private readonly metrics?: TrellisMetrics,
  ) {
    for (const channel of channels) this.router.add('GET', channel.path, channel);
  }

  get connections(): number {
    return this.open.size;
  }

  /** Whether some channel serves this path (transports use it to decline foreign upgrades). */
  matches(path: string): boolean {
    const stripped = this.strip(path);
    if (stripped === null) return false;
    const found = this.router.find('GET', stripped);
    return !!found && 'value' in found;
  }

  async upgrade(input: UpgradeInput): Promise<UpgradeDecision> {
    const path = this.strip(input.path);
    const found = path === null ? null : this.router.find('GET', path);
    if (!found || !('value' in found)) {
      return this.refuse(new TrellisError('not_found', 'channel_not_found', `No WebSocket channel at ${input.path}.`));
    }
    if (!this.isReady()) return this.refuse(new TrellisError('unavailable', 'not_ready', 'The server is starting or stopping.'));
    const channel = found.value;
    const request: ChannelUpgradeRequest = {
      path: path!,
      params: found.params,
      query: new URLSearchParams(input.query),
      headers: input.headers,
      remoteAddress: input.remoteAddress,
    };
    try {
      const accepted = await channel.accept(request, { log: this.log.child({ channel: channel.name }), get: this.get });
      const build = typeof accepted === 'function' ? accepted : (socket: SocketLike) => accepted.open(socket);
      const channelLimit = channel.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD;
      const ownLimit = typeof accepted === 'function' ? undefined : accepted.maxPayloadBytes;
      return {
        ok: true,
        channel,
        maxPayloadBytes: ownLimit === undefined ? channelLimit : Math.min(ownLimit, channelLimit),
        open: (socket) => {
          this.open.add(socket);
          this.metrics?.websocketConnections.inc({ channel: channel.name });
          this.metrics?.websocketOpened.inc({ channel: channel.name });
          const session = build(socket);
          return {
            onMessage: (data, isBinary) => session.onMessage(data, isBinary),
            onDrain: () => session.onDrain?.(),
            onClose: (code, reason) => {
              if (this.open.delete(socket)) this.metrics?.websocketConnections.dec({ channel: channel.name });
              session.onClose(code, reason);
            },
          };
        },
      };
    } catch (error) {
      return this.refuse(error);
    }
  }

  /** Closes every open socket with 1001 (going away). */
  closeAll(reason = 'server shutting down'): void {
    for (const socket of [...this.open]) {
      try {
        socket.close(1001, reason);
      } catch {
        // already closed
      }
    }
  }

  private strip(path: string): string | null {
    if (!this.basePath) return path;
    return path.startsWith(`${this.basePath}/`) ? path.slice(this.basePath.length) : null;
  }

  private refuse(thrown: unknown): UpgradeDecision {
    const error = toTrellisError(thrown);
    if (error.status >= 500) this.log.error({ err: error.cause ?? error }, 'websocket upgrade failed');
    const body = JSON.stringify({ error: error.code, message: error.exposed ? error.message : 'An internal error occurred.' });
    return { ok: false, response: { status: error.status, headers: { 'content-type': 'application/json; charset=utf-8', ...error.headers }, body } };
  }
}
