import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import type { PubSub } from '../../ports/pubsub.js';
import type { Authenticator } from './authenticator.js';

/**
 * A change that may withdraw access, as every host process hears of it. It names what changed, not
 * the verdict: each open socket it concerns checks its credential and permission again.
 *
 * - `user`: the user changed (disabled, flags, password, email, ...).
 * - `credentials`: stored credentials (API keys, agent tokens, device tokens, OAuth tokens) were revoked.
 * - `oauth_client`: every token of an OAuth client (the app was disabled or deleted).
 * - `team`: a team's membership changed (one member when `userId` is set, else the whole team was deleted).
 * - `project`: a project's access or existence changed.
 * - `documents`: documents were deleted.
 */
export type AccessRevokedSignal =
  | { kind: 'user'; userId: string }
  | { kind: 'credentials'; credentialIds: string[] }
  | { kind: 'oauth_client'; clientId: string }
  | { kind: 'team'; teamId: string; userId?: string }
  | { kind: 'project'; projectId: string }
  | { kind: 'documents'; documentIds: string[] };

/** What an open socket depends on: the signals that name any of it make the socket check again. */
export interface AccessSubject {
  userId: string;
  /** The administrator acting as the user (`become`): a change to the administrator concerns the socket too. */
  actorId?: string;
  credentialIds: readonly string[];
  clientId?: string;
  teamId?: string;
  projectId?: string;
  documentId?: string;
}

export type AccessWatcher = (signal: AccessRevokedSignal) => void;

export const accessRevocationTopic = 'trellis:access-revoked';

/** Whether a signal concerns a socket with this subject. */
export function signalConcerns(signal: AccessRevokedSignal, subject: AccessSubject): boolean {
  switch (signal.kind) {
    case 'user':
      return signal.userId === subject.userId || signal.userId === subject.actorId;
    case 'credentials':
      return subject.credentialIds.some((id) => signal.credentialIds.includes(id));
    case 'oauth_client':
      return subject.clientId !== undefined && subject.clientId === signal.clientId;
    case 'team':
      return subject.teamId === signal.teamId && (signal.userId === undefined || signal.userId === subject.userId);
    case 'project':
      return subject.projectId === signal.projectId;
    case 'documents':
      return subject.documentId !== undefined && signal.documentIds.includes(subject.documentId);
  }
}

function parseSignal(raw: Uint8Array | string): AccessRevokedSignal | null {
  try {
    const value = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as Record<string, unknown>;
    const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
    const strs = (v: unknown): v is string[] => Array.isArray(v) && v.every(str);
    switch (value.kind) {
      case 'user':
        return str(value.userId) ? { kind: 'user', userId: value.userId } : null;
      case 'credentials':
        return strs(value.credentialIds) ? { kind: 'credentials', credentialIds: value.credentialIds } : null;
      case 'oauth_client':
        return str(value.clientId) ? { kind: 'oauth_client', clientId: value.clientId } : null;
      case 'team':
        if (!str(value.teamId)) return null;
        return str(value.userId) ? { kind: 'team', teamId: value.teamId, userId: value.userId } : { kind: 'team', teamId: value.teamId };
      case 'project':
        return str(value.projectId) ? { kind: 'project', projectId: value.projectId } : null;
      case 'documents':
        return strs(value.documentIds) ? { kind: 'documents', documentIds: value.documentIds } : null;
      default:
        return null;
    }
  } catch {
    return null;
  }
}

/**
 * Carries access-revoked signals to every host process through the PubSub port. On each process
 * a signal drops the cached credentials it concerns and tells the open sockets it concerns (the
 * collaboration and realtime channels register as watchers) to check their access again.
 * Domain code raises a signal with the `access.revoked` hook (after its change is committed).
 */
export class AccessRevocations {
  private readonly watchers = new Map<AccessWatcher, AccessSubject | (() => AccessSubject)>();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly pubsub: () => PubSub,
    private readonly authenticator: () => Authenticator,
    private readonly log: Logger,
  ) {}

  /** Subscribes to the other processes' signals. */
  async start(): Promise<void> {
    if (this.unsubscribe) return;
    this.unsubscribe = await this.pubsub().subscribe(accessRevocationTopic, (raw) => {
      const signal = parseSignal(raw);
      if (signal) this.apply(signal);
      else this.log.warn('ignored a malformed access-revoked message');
    });
  }

  async stop(): Promise<void> {
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    await unsubscribe?.().catch(() => undefined);
  }

  /**
   * Publishes a signal to every process (this one included, through the PubSub port). The local
   * credential cache is dropped at once, so this process refuses a revoked credential before the
   * signal comes back.
   */
  async revoke(signal: AccessRevokedSignal): Promise<void> {
    this.invalidate(signal);
    if (!this.unsubscribe) {
      this.apply(signal);
      return;
    }
    try {
      await this.pubsub().publish(accessRevocationTopic, JSON.stringify(signal));
    } catch (error) {
      this.log.warn({ err: error, signal: signal.kind }, 'could not publish an access-revoked signal; only this process applies it');
      this.apply(signal);
    }
  }

  /** Registers an open socket; the returned function unregisters it. `subject` may be read anew each time. */
  watch(subject: AccessSubject | (() => AccessSubject), watcher: AccessWatcher): () => void {
    this.watchers.set(watcher, subject);
    return () => {
      this.watchers.delete(watcher);
    };
  }

  get watching(): number {
    return this.watchers.size;
  }

  private apply(signal: AccessRevokedSignal): void {
    this.invalidate(signal);
    for (const [watcher, subject] of [...this.watchers]) {
      try {
        if (signalConcerns(signal, typeof subject === 'function' ? subject() : subject)) watcher(signal);
      } catch (error) {
        this.log.error({ err: error }, 'an access watcher failed');
      }
    }
  }

  private invalidate(signal: AccessRevokedSignal): void {
    const authenticator = this.authenticator();
    switch (signal.kind) {
      case 'user':
        authenticator.invalidateUser(signal.userId);
        return;
      case 'credentials': {
        const ids = new Set(signal.credentialIds);
        authenticator.invalidateWhere((principal) => (principal.credentialId !== undefined && ids.has(principal.credentialId)) || (principal.device !== undefined && ids.has(principal.device.id)));
        return;
      }
      case 'oauth_client':
        authenticator.invalidateWhere((principal) => principal.clientId === signal.clientId);
        return;
      default:
        return;
    }
  }
}

export const accessRevocationsServiceIdentifier: ServiceIdentifier<AccessRevocations> = Symbol.for('@trellis/core/AccessRevocations');
