import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import * as Y from 'yjs';
import { accessRevocationsServiceIdentifier, type AccessRevocations, type AccessSubject } from '../../../kernel/auth/access-revocation.js';
import type { Authenticator, CredentialMeta } from '../../../kernel/auth/authenticator.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import { requireScopes, scopesAllow } from '../../../kernel/auth/scopes.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { authenticatorServiceIdentifier, configServiceIdentifier, hooksServiceIdentifier, loggerServiceIdentifier, ormServiceIdentifier } from '../../../kernel/tokens.js';
import type { ChannelSession, SocketLike } from '../../../kernel/ws/channel.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { type Author, type CollaborationGate, type CommandResult, emptyDocument, type DocumentContent, Document, type VersionSource, authorOf, DocumentService, type EditRequest } from '../../documents/index.js';
import { documentScopes } from '../../projects/index.js';
import type { CollabConfig } from '../collab.config.js';
import { readDocument, replaceContent } from '../yjs/rich-text-yjs.js';
import { CloseCode, CollabConnection, CollabSession } from './collab-session.js';
import { CollabLeaseStore } from './collab-lease.store.js';
import { YjsStateStore } from './yjs-state.store.js';

/** One online collaborator, as `GET /documents/:id/awareness` answers it. */
export interface Collaborator {
  clientId: number;
  userId: string | null;
  name: string | null;
  color: string | null;
  cursor: { anchor: number; head: number } | null;
  selection: { blockId: string; blockType: string; text?: string } | null;
}

/** What a collaboration socket may do, as checked at the upgrade and again on each access-revoked signal. */
export interface CollabAccess {
  principal: Principal;
  canWrite: boolean;
  teamId: string;
  projectId: string;
}

const acceptedKinds = new Set(['jwt', 'api_key', 'agent_token']);

type Entry = { session: CollabSession } | { loading: Promise<CollabSession> } | { closing: Promise<void> };

const MAX_QUEUED_MESSAGES = 1000;

/**
 * Collaborative editing in this process: opens a `CollabSession` per document on demand, keeps it
 * while WebSocket clients, REST participants or server operations hold it, and closes it (after a
 * last mirror) when nobody does. It is the documents module's `CollaborationGate`.
 */
@injectable()
export class CollabService implements CollaborationGate {
  /** Tells this process apart from the others on the PubSub port. */
  readonly instanceId = randomUUID();
  private readonly entries = new Map<string, Entry>();
  private readonly config: CollabConfig;
  private readonly log: Logger;
  private readonly fullAccessScopes: readonly string[];

  constructor(
    @inject(configServiceIdentifier) config: TrellisConfig,
    @inject(loggerServiceIdentifier) log: Logger,
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(DocumentService) private readonly documents: DocumentService,
    @inject(YjsStateStore) private readonly states: YjsStateStore,
    @inject(CollabLeaseStore) private readonly leases: CollabLeaseStore,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(accessRevocationsServiceIdentifier) private readonly revocations: AccessRevocations,
  ) {
    this.config = config.collab as CollabConfig;
    this.fullAccessScopes = config.auth.fullAccessScopes;
    this.log = log.child({ module: 'collab' });
  }

  // ---------------------------------------------------------------------------------------------
  // Sessions

  /** The open session of a document, loading it when needed; the caller must `release` it. */
  async acquire(documentId: string): Promise<CollabSession> {
    for (;;) {
      const entry = this.entries.get(documentId);
      if (entry && 'closing' in entry) {
        await entry.closing;
        continue;
      }
      if (entry && 'loading' in entry) {
        await entry.loading;
        continue;
      }
      if (entry && 'session' in entry) {
        entry.session.holds++;
        return entry.session;
      }
      const loading = CollabSession.open({
        documentId,
        instanceId: this.instanceId,
        config: this.config,
        clock: this.clock,
        log: this.log,
        hooks: this.hooks,
        pubsub: this.pubsub,
        documents: this.documents,
        states: this.states,
        leases: this.leases,
        fork: () => this.orm.em.fork(),
        newId: () => this.ids.next(),
        onIdle: (session) => void this.unload(session, true),
      });
      this.entries.set(documentId, { loading });
      try {
        const session = await loading;
        this.entries.set(documentId, { session });
      } catch (error) {
        this.entries.delete(documentId);
        throw error;
      }
    }
  }

  release(session: CollabSession): void {
    session.holds--;
    session.maybeIdle();
  }

  /** The open session of a document in this process, if any. */
  session(documentId: string): CollabSession | undefined {
    const entry = this.entries.get(documentId);
    return entry && 'session' in entry && !entry.session.closed ? entry.session : undefined;
  }

  private unload(session: CollabSession, mirror: boolean, closeCode?: { code: number; reason: string }): Promise<void> {
    const entry = this.entries.get(session.documentId);
    if (!entry || !('session' in entry) || entry.session !== session) return Promise.resolve();
    const closing = session.close(mirror, closeCode).finally(() => {
      const current = this.entries.get(session.documentId);
      if (current && 'closing' in current && current.closing === closing) this.entries.delete(session.documentId);
    });
    this.entries.set(session.documentId, { closing });
    return closing;
  }

  /** Closes every session (mirroring what is pending). Called when the kernel stops. */
  async closeAll(): Promise<void> {
    const pending: Promise<unknown>[] = [];
    for (const entry of [...this.entries.values()]) {
      if ('session' in entry) pending.push(this.unload(entry.session, true));
      else if ('closing' in entry) pending.push(entry.closing);
      else pending.push(entry.loading.then((session) => this.unload(session, true)).catch(() => undefined));
    }
    await Promise.allSettled(pending);
  }

  // ---------------------------------------------------------------------------------------------
  // WebSocket clients

  /**
   * Checks a collaboration credential and the caller's access to the document: 401 for a bad
   * credential, 403 for a credential kind or scope that does not allow it, 404 when the document
   * is missing or hidden. Write permission is what the project and the credential's scopes allow.
   */
  async authorize(documentId: string, token: string, meta: CredentialMeta): Promise<CollabAccess> {
    const principal = await this.authenticator.authenticate(token, meta);
    if (!acceptedKinds.has(principal.kind)) {
      throw new TrellisError('forbidden', 'credential_not_allowed', 'Collaborative editing accepts a JWT, an API key or an agent token.');
    }
    requireScopes(principal, documentScopes.read, this.fullAccessScopes);
    const { doc, permissions } = await this.documents.requireDocument(this.orm.em.fork(), documentId, principal, 'read');
    // A credential scoped to reading joins read-only, like a user without write permission.
    const canWrite = permissions.has('write') && scopesAllow(principal, documentScopes.write, this.fullAccessScopes);
    return { principal, canWrite, teamId: doc.project.team.id, projectId: doc.project.id };
  }

  /**
   * The channel session of a WebSocket client: messages wait until the document is loaded. The
   * socket watches access-revoked signals: one that concerns it holds its messages while its
   * access is checked again, then closes it (4401, 4403, 4404) or turns it read-only.
   */
  connect(documentId: string, socket: SocketLike, access: CollabAccess, token: string, meta: CredentialMeta): ChannelSession {
    const conn = new CollabConnection(socket, access.principal, access.canWrite);
    let subject = subjectOf(documentId, access);
    let session: CollabSession | undefined;
    let gone = false;
    let checking = false;
    let checkAgain = false;
    const queue: Uint8Array[] = [];
    const unwatch = this.revocations.watch(
      () => subject,
      () => recheck(),
    );
    const close = (code: number, reason: string) => {
      if (gone) return;
      gone = true;
      unwatch();
      queue.length = 0;
      socket.close(code, reason);
    };
    const handle = (data: Uint8Array) => {
      try {
        session!.handle(conn, data);
      } catch (error) {
        this.log.debug({ err: error, documentId }, 'closing a collaboration socket that sent a malformed message');
        close(CloseCode.malformed, 'malformed y-websocket message');
      }
    };
    const drain = () => {
      while (session && !checking && !gone && queue.length) handle(queue.shift()!);
    };
    const recheck = () => {
      if (gone) return;
      if (checking) {
        checkAgain = true;
        return;
      }
      checking = true;
      this.authorize(documentId, token, meta)
        .then(
          (fresh) => {
            conn.principal = fresh.principal;
            conn.canWrite = fresh.canWrite;
            subject = subjectOf(documentId, fresh);
          },
          async (error: unknown) => {
            const verdict = await this.revokedVerdict(documentId, error);
            if (verdict) close(verdict.code, verdict.reason);
          },
        )
        .finally(() => {
          checking = false;
          if (checkAgain) {
            checkAgain = false;
            recheck();
          } else drain();
        });
    };
    this.acquire(documentId).then(
      (opened) => {
        if (gone) {
          this.release(opened);
          return;
        }
        session = opened;
        opened.attach(conn);
        this.release(opened);
        drain();
      },
      (error: unknown) => {
        const missing = error instanceof TrellisError && error.status === 404;
        if (!missing) this.log.error({ err: error, documentId }, 'could not open the collaborative session');
        close(missing ? CloseCode.documentGone : CloseCode.serverError, missing ? 'document not found' : 'internal error');
      },
    );
    return {
      onMessage: (data, isBinary) => {
        if (gone) return;
        if (!isBinary || typeof data === 'string') {
          close(CloseCode.unsupported, 'y-websocket messages are binary');
          return;
        }
        // Cheap on every frame: a credential that expired since the upgrade ends the socket.
        const expiresAtMs = conn.principal.expiresAtMs;
        if (expiresAtMs !== undefined && Date.now() >= expiresAtMs) {
          close(CloseCode.credentialInvalid, 'credential expired');
          return;
        }
        const bytes = new Uint8Array(data);
        if (session && !checking) handle(bytes);
        else if (queue.length < MAX_QUEUED_MESSAGES) queue.push(bytes);
        else close(CloseCode.overloaded, 'too many messages while the access was checked');
      },
      onClose: () => {
        gone = true;
        unwatch();
        session?.detach(conn);
      },
    };
  }

  /** The close code for a failed access check, or null to keep the socket (never for a client's error). */
  private async revokedVerdict(documentId: string, error: unknown): Promise<{ code: number; reason: string } | null> {
    if (!(error instanceof TrellisError)) {
      this.log.warn({ err: error, documentId }, 'could not check a collaboration socket\'s access again; closing it');
      return { code: CloseCode.overloaded, reason: 'access check failed; reconnect' };
    }
    if (error.status === 401) return { code: CloseCode.credentialInvalid, reason: 'credential no longer valid' };
    if (error.status === 404) {
      const exists = await this.orm.em
        .fork()
        .count(Document, { id: documentId, deletedAt: null })
        .catch(() => 1);
      return exists ? { code: CloseCode.accessRevoked, reason: 'access revoked' } : { code: CloseCode.documentGone, reason: 'document deleted' };
    }
    if (error.status === 403) return { code: CloseCode.accessRevoked, reason: 'access revoked' };
    this.log.warn({ err: error, documentId }, 'could not check a collaboration socket\'s access again; closing it');
    return { code: CloseCode.overloaded, reason: 'access check failed; reconnect' };
  }

  // ---------------------------------------------------------------------------------------------
  // CollaborationGate

  localConnections(documentId: string): number {
    const session = this.session(documentId);
    if (!session) return 0;
    const now = this.clock.nowMs();
    let participants = 0;
    for (const participant of session.participants.values()) if (participant.expiresAtMs > now) participants++;
    return session.connections.size + participants;
  }

  localEditors(documentId: string): number {
    const session = this.session(documentId);
    if (!session) return 0;
    const now = this.clock.nowMs();
    let editors = 0;
    for (const participant of session.participants.values()) if (participant.canWrite && participant.expiresAtMs > now) editors++;
    for (const conn of session.connections) if (conn.canWrite) editors++;
    return editors;
  }

  holdsSession(documentId: string): boolean {
    return this.entries.has(documentId);
  }

  isLive(documentId: string): boolean {
    return this.session(documentId) !== undefined;
  }

  async flush(documentId: string): Promise<void> {
    await this.session(documentId)?.flush();
  }

  async applyContent(documentId: string, content: DocumentContent, author: Author, source: VersionSource): Promise<string> {
    const session = await this.acquire(documentId);
    try {
      return await session.applyServerChange(() => replaceContent(session.fragment, content), author, source);
    } finally {
      this.release(session);
    }
  }

  async closeDocument(documentId: string): Promise<void> {
    const entry = this.entries.get(documentId);
    if (!entry) return;
    if ('closing' in entry) return entry.closing;
    const session = 'session' in entry ? entry.session : await entry.loading.catch(() => undefined);
    if (session) await this.unload(session, false, { code: CloseCode.documentGone, reason: 'document deleted' });
  }

  // ---------------------------------------------------------------------------------------------
  // Operations behind the routes

  /** An edit (whole content or commands) applied to the live Yjs document as one server transaction. */
  async edit(documentId: string, request: EditRequest, principal: Principal, source: VersionSource): Promise<{ version: string; results: CommandResult[] }> {
    const session = await this.acquire(documentId);
    try {
      session.fixIds();
      const current = readDocument(session.fragment) ?? emptyDocument();
      const outcome = this.documents.computeEdit(current, request, principal);
      const version = outcome.changed
        ? await session.applyServerChange(() => replaceContent(session.fragment, outcome.content), authorOf(principal), source)
        : (await session.flush(), session.lastHash);
      return { version, results: outcome.results };
    } finally {
      this.release(session);
    }
  }

  /** Registers a REST participant; the session (and the lease) stays open while it is registered. */
  async join(documentId: string, principal: Principal, canWrite = true): Promise<{ participantId: string; expiresAt: Date; state: Uint8Array; activeConnections: number }> {
    const session = await this.acquire(documentId);
    try {
      const participantId = this.ids.next();
      const expiresAtMs = this.clock.nowMs() + this.config.participantTtlMs;
      for (const [id, participant] of session.participants) if (participant.userId === principal.userId) session.participants.delete(id);
      session.participants.set(participantId, { userId: principal.userId, expiresAtMs, canWrite });
      return { participantId, expiresAt: new Date(expiresAtMs), state: Y.encodeStateAsUpdate(session.doc), activeConnections: this.localConnections(documentId) };
    } finally {
      this.release(session);
    }
  }

  /** Removes the caller's REST participation (one id, or all of the caller's); answers how many were removed. */
  async leave(documentId: string, principal: Principal, participantId?: string): Promise<number> {
    const session = this.session(documentId);
    if (!session) return 0;
    let removed = 0;
    for (const [id, participant] of session.participants) {
      if (participant.userId !== principal.userId) continue;
      if (participantId !== undefined && id !== participantId) continue;
      session.participants.delete(id);
      removed++;
    }
    if (removed) {
      await session.flush();
      session.maybeIdle();
    }
    return removed;
  }

  /** Keeps a REST participant registered (called on each of its collab edits). */
  touch(documentId: string, principal: Principal): void {
    const session = this.session(documentId);
    if (!session) return;
    const until = this.clock.nowMs() + this.config.participantTtlMs;
    for (const participant of session.participants.values()) if (participant.userId === principal.userId) participant.expiresAtMs = until;
  }

  /** The collaborators connected to this process, from the awareness states their clients announce. */
  awareness(documentId: string): { collaborators: Collaborator[]; activeConnections: number } {
    const session = this.session(documentId);
    if (!session) return { collaborators: [], activeConnections: 0 };
    const states = session.awareness.getStates();
    const collaborators: Collaborator[] = [];
    for (const conn of session.connections) {
      for (const clientId of conn.controlledIds) {
        const state = states.get(clientId);
        if (state) collaborators.push(toCollaborator(clientId, conn, state));
      }
    }
    return { collaborators, activeConnections: this.localConnections(documentId) };
  }

  /** The Yjs state to hand out: the live document's in this process, else the stored one if it is current. */
  async currentState(documentId: string, storedHashMustMatch: string | null): Promise<Uint8Array | null> {
    const session = this.session(documentId);
    if (session) return Y.encodeStateAsUpdate(session.doc);
    const row = await this.states.load(this.orm.em.fork(), documentId);
    if (!row) return null;
    if (storedHashMustMatch !== null && row.contentHash !== storedHashMustMatch) return null;
    return new Uint8Array(Buffer.from(row.state, 'base64'));
  }

  /** Applies a client's Yjs state as an update of the live document (opening the session for it). */
  async applyState(documentId: string, state: Uint8Array, author: Author): Promise<string> {
    const session = await this.acquire(documentId);
    try {
      return await session.applyServerChange(() => Y.applyUpdate(session.doc, state), author, 'yjs_state');
    } finally {
      this.release(session);
    }
  }
}

function subjectOf(documentId: string, access: CollabAccess): AccessSubject {
  const { principal } = access;
  return {
    userId: principal.userId,
    ...(principal.actorId ? { actorId: principal.actorId } : {}),
    credentialIds: principal.credentialId ? [principal.credentialId] : [],
    ...(principal.clientId ? { clientId: principal.clientId } : {}),
    teamId: access.teamId,
    projectId: access.projectId,
    documentId,
  };
}

const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const num = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

function toCollaborator(clientId: number, conn: CollabConnection, state: Record<string, any>): Collaborator {
  const user = typeof state.user === 'object' && state.user !== null ? state.user : {};
  const cursor = state.cursor && num(state.cursor.anchor) && num(state.cursor.head) ? { anchor: state.cursor.anchor, head: state.cursor.head } : null;
  const sel = state.selection;
  const selection =
    sel && typeof sel.blockId === 'string' && typeof sel.blockType === 'string'
      ? { blockId: sel.blockId, blockType: sel.blockType, ...(typeof sel.text === 'string' && sel.text !== '' ? { text: sel.text } : {}) }
      : null;
  return {
    clientId,
    userId: conn.principal.userId,
    name: str(user.name) ?? str(state.name) ?? conn.principal.user.name ?? null,
    color: str(user.color) ?? str(state.color),
    cursor,
    selection,
  };
}
