import { inject, injectable } from 'inversify';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { configServiceIdentifier } from '../../../kernel/tokens.js';
import { realtimeSection } from '../realtime.config.js';
import type { ChannelKind } from '../topics.js';

/** What the registry needs of an open realtime socket. */
export interface TrackedConnection {
  readonly kind: ChannelKind;
  /** The user (user channel), application or device the socket belongs to. */
  readonly targetId: string;
  /** The credentials the socket authenticated with (stored ids or JWT `jti`s). */
  readonly credentialIds: readonly string[];
  /** Closes the socket if one of its deadlines (authentication, heartbeat) has passed. */
  checkDeadlines(nowMs: number): void;
  close(code: number, reason: string): void;
}

/**
 * The realtime sockets open in this process: enforces the per-user and per-target connection
 * limits, finds sockets by credential (to close them when it is revoked), and runs one sweep
 * timer for every socket's authentication and heartbeat deadlines instead of a timer per socket.
 */
@injectable()
export class ConnectionRegistry {
  private readonly byTarget = new Map<string, Set<TrackedConnection>>();
  private readonly all = new Set<TrackedConnection>();
  private readonly maxPerUser: number;
  private readonly maxPerTarget: number;
  private readonly sweepMs: number;
  private sweeper?: NodeJS.Timeout;

  constructor(@inject(configServiceIdentifier) config: TrellisConfig) {
    const section = realtimeSection(config);
    this.maxPerUser = section.maxConnectionsPerUser;
    this.maxPerTarget = section.maxConnectionsPerTarget;
    // Deadlines are met within a quarter of the shorter one (at most 5 s late).
    this.sweepMs = Math.max(50, Math.min(5_000, Math.floor(Math.min(section.authTimeoutMs, section.heartbeatTimeoutMs) / 4)));
  }

  get size(): number {
    return this.all.size;
  }

  /** Registers a socket; false when its user or target already has the most sockets allowed. */
  add(connection: TrackedConnection): boolean {
    const key = `${connection.kind}:${connection.targetId}`;
    let set = this.byTarget.get(key);
    const limit = connection.kind === 'user' ? this.maxPerUser : this.maxPerTarget;
    if (set && set.size >= limit) return false;
    if (!set) this.byTarget.set(key, (set = new Set()));
    set.add(connection);
    this.all.add(connection);
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), this.sweepMs);
      this.sweeper.unref();
    }
    return true;
  }

  remove(connection: TrackedConnection): void {
    if (!this.all.delete(connection)) return;
    const key = `${connection.kind}:${connection.targetId}`;
    const set = this.byTarget.get(key);
    if (set) {
      set.delete(connection);
      if (set.size === 0) this.byTarget.delete(key);
    }
    if (this.all.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** The other sockets of the same user, application or device in this process (read as they are: no copy). */
  *peers(connection: TrackedConnection): Iterable<TrackedConnection> {
    const set = this.byTarget.get(`${connection.kind}:${connection.targetId}`);
    if (!set) return;
    for (const other of set) if (other !== connection) yield other;
  }

  /** Closes every socket that authenticated with this credential. */
  closeByCredential(credentialId: string, code: number, reason: string): number {
    let closed = 0;
    for (const connection of [...this.all]) {
      if (connection.credentialIds.includes(credentialId)) {
        connection.close(code, reason);
        closed++;
      }
    }
    return closed;
  }

  shutdown(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private sweep(): void {
    const now = Date.now();
    for (const connection of [...this.all]) connection.checkDeadlines(now);
  }
}
