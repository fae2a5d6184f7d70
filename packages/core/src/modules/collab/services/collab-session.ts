import type { EntityManager } from '@mikro-orm/core';
import type { Logger } from 'pino';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Hooks } from '../../../kernel/hooks.js';
import type { SocketLike } from '../../../kernel/ws/channel.js';
import type { Clock } from '../../../ports/clock.js';
import type { PubSub } from '../../../ports/pubsub.js';
import { type Author, type SerializedContent, Document, type VersionSource, documentNotFound, authorOf, type DocumentService } from '../../documents/index.js';
import type { CollabConfig } from '../collab.config.js';
import {
  awarenessMessage,
  decodeClientMessage,
  isEmptyUpdate,
  PeerKind,
  peerMessage,
  permissionDeniedMessage,
  readPeerMessage,
  syncStep1Message,
  syncStep2Message,
  updateMessage,
} from '../yjs/protocol.js';
import { ensureElementIds, FRAGMENT_NAME, readDocument, writeDocument } from '../yjs/rich-text-yjs.js';
import type { CollabLeaseStore } from './collab-lease.store.js';
import { decodeState, type YjsStateStore } from './yjs-state.store.js';

/**
 * Close codes (4400-4499 tell y-websocket clients not to reconnect). `credentialInvalid` (4401):
 * the socket's credential expired, was revoked, or its user was disabled or changed password;
 * `accessRevoked` (4403): the user lost read access to the document (team membership, role,
 * project access); `documentGone` (4404): the document was deleted.
 */
export const CloseCode = {
  credentialInvalid: 4401,
  accessRevoked: 4403,
  documentGone: 4404,
  malformed: 1007,
  unsupported: 1003,
  overloaded: 1013,
  serverError: 1011,
} as const;

/** A WebSocket client of a collaborative session. */
export class CollabConnection {
  /** Awareness client ids this connection announced (removed when it leaves). */
  readonly controlledIds = new Set<number>();

  constructor(
    readonly socket: SocketLike,
    /** Replaced when the access is checked again. */
    public principal: Principal,
    /** Turns false when a check finds the write permission gone. */
    public canWrite: boolean,
  ) {}

  send(data: Uint8Array): void {
    try {
      this.socket.send(data, true);
    } catch {
      // the socket is closing
    }
  }
}

/** Origin of a change made by the server itself (smart-edit, collab edit, rollback, ...). */
export class ServerOrigin {
  constructor(
    readonly author: Author,
    readonly source: VersionSource,
  ) {}
}

const LOAD_ORIGIN = Symbol('collab:load');
const PEER_ORIGIN = Symbol('collab:peer');
const FIX_ORIGIN = Symbol('collab:fix');

export interface SessionDeps {
  documentId: string;
  instanceId: string;
  config: CollabConfig;
  clock: Clock;
  log: Logger;
  hooks: Hooks;
  pubsub: PubSub;
  documents: DocumentService;
  states: YjsStateStore;
  leases: CollabLeaseStore;
  fork(): EntityManager;
  newId(): string;
  /** Called when nobody holds the session any more. */
  onIdle(session: CollabSession): void;
}

export const collabTopic = (documentId: string) => `trellis:collab:${documentId}`;

/**
 * The live Yjs document of one document in this process: the source of truth while it is open.
 * It speaks y-websocket to its connections, exchanges updates and awareness with the other host
 * processes through the PubSub port, holds the collaborative lease on the document, and mirrors
 * the Yjs content to the stored JSON (and its hash, and a version) after a debounce.
 */
export class CollabSession {
  readonly doc = new Y.Doc();
  readonly fragment: Y.XmlFragment;
  readonly awareness: awarenessProtocol.Awareness;
  readonly connections = new Set<CollabConnection>();
  /** REST participants (collab/join) by id. */
  readonly participants = new Map<string, { userId: string; expiresAtMs: number; canWrite: boolean }>();
  /** Operations in progress that keep the session open. */
  holds = 0;
  /** The stored content hash as this session last wrote or read it. */
  lastHash = '';
  closed = false;
  /** `close` has begun: the lease is no longer renewed. */
  closing = false;

  private dirty = false;
  private firstDirtyAtMs = 0;
  private pendingAuthor: Author | null = null;
  private pendingSource: VersionSource = 'collab';
  private mirrorTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private leaseUntil: Date | null = null;
  /** Lease writes, one at a time: a renewal still on its way never lands after the release. */
  private leaseChain: Promise<void> = Promise.resolve();
  private leaseReleased = false;
  private chain: Promise<void> = Promise.resolve();
  private unsubscribe: (() => Promise<void>) | undefined;

  private constructor(private readonly deps: SessionDeps) {
    this.fragment = this.doc.getXmlFragment(FRAGMENT_NAME);
    this.awareness = new awarenessProtocol.Awareness(this.doc);
    this.awareness.setLocalState(null);
  }

  get documentId(): string {
    return this.deps.documentId;
  }

  /** Takes the lease, loads the document (from its Yjs state or its JSON) and joins the other processes. */
  static async open(deps: SessionDeps): Promise<CollabSession> {
    const session = new CollabSession(deps);
    try {
      await session.load();
    } catch (error) {
      await session.dispose();
      throw error;
    }
    return session;
  }

  get holders(): number {
    return this.connections.size + this.participants.size + this.holds;
  }

  private async load(): Promise<void> {
    const { documentId } = this.deps;
    const before = await this.deps.fork().findOne(Document, { id: documentId, deletedAt: null });
    if (!before) throw documentNotFound();
    const heldElsewhere = this.deps.documents.leaseActive(before);
    // The lease first: from here on no REST write lands, so what is read next stays current.
    await this.renewLease();
    for (let attempt = 0; ; attempt++) {
      const em = this.deps.fork();
      const doc = await em.findOne(Document, { id: documentId, deletedAt: null });
      if (!doc) throw documentNotFound();
      const row = await this.deps.states.load(em, documentId);
      if (row && (row.contentHash === doc.contentHash || heldElsewhere)) {
        Y.applyUpdate(this.doc, decodeState(row.state), LOAD_ORIGIN);
        this.lastHash = doc.contentHash;
        break;
      }
      // No usable state: build one from the JSON and store it at once, so that every process
      // shares these Yjs items (two independent builds would duplicate the content when merged).
      const fresh = new Y.Doc();
      fresh.transact(() => writeDocument(fresh.getXmlFragment(FRAGMENT_NAME), doc.content));
      const update = Y.encodeStateAsUpdate(fresh);
      fresh.destroy();
      if (await this.deps.states.replace(em, documentId, row, update, doc.contentHash)) {
        Y.applyUpdate(this.doc, update, LOAD_ORIGIN);
        this.lastHash = doc.contentHash;
        break;
      }
      if (attempt >= 3) throw new Error(`could not load the Yjs state of document ${documentId}`);
    }
    this.doc.on('update', (update: Uint8Array, origin: unknown) => this.onUpdate(update, origin));
    this.awareness.on('update', (changes: { added: number[]; updated: number[]; removed: number[] }, origin: unknown) => this.onAwareness(changes, origin));
    this.unsubscribe = await this.deps.pubsub.subscribe(collabTopic(documentId), (message) => this.onPeer(message));
    this.publish(PeerKind.hello, Y.encodeStateVector(this.doc));
    const every = Math.max(250, Math.floor(this.deps.config.leaseMs / 3));
    this.leaseTimer = setInterval(() => void this.tick(), every);
    this.leaseTimer.unref();
  }

  // ---------------------------------------------------------------------------------------------
  // Connections

  attach(conn: CollabConnection): void {
    this.connections.add(conn);
    conn.send(syncStep1Message(this.doc));
    const states = this.awareness.getStates();
    if (states.size > 0) conn.send(awarenessMessage(this.awareness, [...states.keys()]));
  }

  detach(conn: CollabConnection): void {
    if (!this.connections.delete(conn)) return;
    if (!this.closed && conn.controlledIds.size) awarenessProtocol.removeAwarenessStates(this.awareness, [...conn.controlledIds], null);
    this.maybeIdle();
  }

  /** Handles one y-websocket message of a connection; throws on malformed bytes. */
  handle(conn: CollabConnection, data: Uint8Array): void {
    if (this.closed) return;
    const message = decodeClientMessage(data);
    switch (message.type) {
      case 'sync-step1':
        conn.send(syncStep2Message(this.doc, message.stateVector));
        return;
      case 'sync-update':
        if (!conn.canWrite) {
          if (!isEmptyUpdate(message.update)) conn.send(permissionDeniedMessage('This connection is read-only: you have no write permission in the project.'));
          return;
        }
        Y.applyUpdate(this.doc, message.update, conn);
        return;
      case 'awareness':
        awarenessProtocol.applyAwarenessUpdate(this.awareness, message.update, conn);
        return;
      case 'query-awareness':
        conn.send(awarenessMessage(this.awareness, [...this.awareness.getStates().keys()]));
        return;
      default:
        return;
    }
  }

  maybeIdle(): void {
    if (!this.closed && this.holders === 0) this.deps.onIdle(this);
  }

  // ---------------------------------------------------------------------------------------------
  // Events

  private onUpdate(update: Uint8Array, origin: unknown): void {
    if (origin === LOAD_ORIGIN || this.closed) return;
    const message = updateMessage(update);
    for (const conn of this.connections) if (conn !== origin) conn.send(message);
    if (origin !== PEER_ORIGIN) this.publish(PeerKind.update, update);
    if (origin === FIX_ORIGIN) return;
    if (origin instanceof CollabConnection) {
      this.pendingAuthor = authorOf(origin.principal);
      this.pendingSource = 'collab';
    } else if (origin instanceof ServerOrigin) {
      this.pendingAuthor = origin.author;
      this.pendingSource = origin.source;
    }
    this.markDirty();
  }

  private onAwareness({ added, updated, removed }: { added: number[]; updated: number[]; removed: number[] }, origin: unknown): void {
    if (this.closed) return;
    if (origin instanceof CollabConnection) {
      for (const id of added) origin.controlledIds.add(id);
      for (const id of removed) origin.controlledIds.delete(id);
    }
    const changed = [...added, ...updated, ...removed];
    if (!changed.length) return;
    const message = awarenessMessage(this.awareness, changed);
    for (const conn of this.connections) conn.send(message);
    if (origin !== PEER_ORIGIN) this.publish(PeerKind.awareness, awarenessProtocol.encodeAwarenessUpdate(this.awareness, changed));
  }

  private onPeer(raw: Uint8Array | string): void {
    if (this.closed || typeof raw === 'string') return;
    let message;
    try {
      message = readPeerMessage(raw);
    } catch {
      return;
    }
    if (message.instanceId === this.deps.instanceId) return;
    try {
      switch (message.kind) {
        case PeerKind.hello: {
          const missing = Y.encodeStateAsUpdate(this.doc, message.payload);
          if (!isEmptyUpdate(missing)) this.publish(PeerKind.update, missing);
          this.publish(PeerKind.sync, Y.encodeStateVector(this.doc));
          const local = [...this.connections].flatMap((conn) => [...conn.controlledIds]);
          if (local.length) this.publish(PeerKind.awareness, awarenessProtocol.encodeAwarenessUpdate(this.awareness, local));
          return;
        }
        case PeerKind.sync: {
          const missing = Y.encodeStateAsUpdate(this.doc, message.payload);
          if (!isEmptyUpdate(missing)) this.publish(PeerKind.update, missing);
          return;
        }
        case PeerKind.update:
          Y.applyUpdate(this.doc, message.payload, PEER_ORIGIN);
          return;
        case PeerKind.awareness:
          awarenessProtocol.applyAwarenessUpdate(this.awareness, message.payload, PEER_ORIGIN);
          return;
      }
    } catch (error) {
      this.deps.log.warn({ err: error, documentId: this.documentId }, 'ignored a malformed collaboration message from another process');
    }
  }

  private publish(kind: (typeof PeerKind)[keyof typeof PeerKind], payload: Uint8Array): void {
    void this.deps.pubsub.publish(collabTopic(this.documentId), peerMessage(this.deps.instanceId, kind, payload)).catch((error: unknown) => {
      this.deps.log.warn({ err: error, documentId: this.documentId }, 'could not publish a collaboration message');
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Server edits and mirroring

  /** Runs `change` on the Yjs document as one transaction by the server, then mirrors at once. */
  async applyServerChange(change: () => void, author: Author, source: VersionSource): Promise<string> {
    this.doc.transact(() => ensureElementIds(this.fragment, this.deps.newId), FIX_ORIGIN);
    this.doc.transact(change, new ServerOrigin(author, source));
    await this.flush();
    return this.lastHash;
  }

  /** Gives top-level blocks missing or repeated ids fresh ones, as a server transaction. */
  fixIds(): void {
    this.doc.transact(() => ensureElementIds(this.fragment, this.deps.newId), FIX_ORIGIN);
  }

  private markDirty(): void {
    this.dirty = true;
    const now = this.deps.clock.nowMs();
    if (!this.firstDirtyAtMs) this.firstDirtyAtMs = now;
    if (this.mirrorTimer) clearTimeout(this.mirrorTimer);
    const wait = Math.max(0, Math.min(this.deps.config.mirrorDebounceMs, this.firstDirtyAtMs + this.deps.config.mirrorMaxWaitMs - now));
    this.mirrorTimer = setTimeout(() => {
      this.mirrorTimer = undefined;
      void this.flush().catch(() => undefined);
    }, wait);
    this.mirrorTimer.unref();
  }

  /** Mirrors pending changes now (one mirror at a time). Rejects when the mirror fails. */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.mirror());
    this.chain = run.catch((error: unknown) => {
      this.deps.log.error({ err: error, documentId: this.documentId }, 'mirroring the collaborative document failed');
    });
    return run;
  }

  private async mirror(): Promise<void> {
    if (this.mirrorTimer) clearTimeout(this.mirrorTimer);
    this.mirrorTimer = undefined;
    if (!this.dirty) return;
    this.dirty = false;
    this.firstDirtyAtMs = 0;
    const author = this.pendingAuthor ?? { userId: null, kind: null };
    const source = this.pendingSource;
    this.pendingAuthor = null;
    this.pendingSource = 'collab';
    if (!this.closed) this.fixIds();
    const content = readDocument(this.fragment);
    if (!content) {
      this.deps.log.warn({ documentId: this.documentId }, 'the collaborative document holds content that is not valid rich-text JSON; not mirrored');
      return;
    }
    let serialized: SerializedContent;
    try {
      serialized = this.deps.documents.serialize(content);
    } catch {
      this.deps.log.warn({ documentId: this.documentId }, 'the collaborative document exceeds documents.maxContentBytes; not mirrored');
      return;
    }
    const hash = serialized.hash;
    const state = Y.encodeStateAsUpdate(this.doc);
    if (hash !== this.lastHash) await this.writeContent(content, serialized, author, source);
    await this.deps.states.merge(this.deps.fork(), this.documentId, state, hash);
    this.lastHash = hash;
  }

  /** Writes the mirrored content: compare-and-swap on the last known hash, re-read and retried when another process mirrored meanwhile. */
  private async writeContent(content: NonNullable<ReturnType<typeof readDocument>>, serialized: SerializedContent, author: Author, source: VersionSource): Promise<void> {
    const hash = serialized.hash;
    let base = this.lastHash;
    for (let attempt = 0; attempt < 5; attempt++) {
      const em = this.deps.fork();
      const now = this.deps.clock.now();
      // Content, hash and head version in one bound statement, with a snapshot version.
      const written = await this.deps.documents.writeMirrored(em, this.documentId, content, serialized, base, author, source, now);
      if (written) {
        await this.deps.hooks.emit('document.content_changed', { documentId: this.documentId, version: hash, source, authorId: author.userId });
        return;
      }
      const current = await this.deps.fork().findOne(Document, { id: this.documentId, deletedAt: null });
      if (!current) throw documentNotFound();
      if (current.contentHash === hash) return;
      base = current.contentHash;
    }
    throw new Error(`could not mirror document ${this.documentId}: the stored content kept changing`);
  }

  // ---------------------------------------------------------------------------------------------
  // Lease and lifetime

  private async tick(): Promise<void> {
    if (this.closed || this.closing) return;
    const now = this.deps.clock.nowMs();
    let pruned = false;
    for (const [id, participant] of this.participants) {
      if (participant.expiresAtMs <= now) {
        this.participants.delete(id);
        pruned = true;
      }
    }
    if (pruned) this.maybeIdle();
    if (this.closed) return;
    // PubSub delivers at most once: ask the other processes, now and then, for anything missed.
    this.publish(PeerKind.sync, Y.encodeStateVector(this.doc));
    await this.renewLease().catch((error: unknown) => this.deps.log.warn({ err: error, documentId: this.documentId }, 'could not renew the collaborative lease'));
  }

  private renewLease(): Promise<void> {
    return this.leaseStep(async () => {
      if (this.leaseReleased || this.closing) return;
      const now = this.deps.clock.now();
      const until = new Date(now.getTime() + this.deps.config.leaseMs);
      // Set before the write: should it fail half-way, the release still runs.
      this.leaseUntil = until;
      await this.deps.leases.renew(this.deps.fork(), this.documentId, this.deps.instanceId, until, now);
    });
  }

  private leaseStep(step: () => Promise<void>): Promise<void> {
    const run = this.leaseChain.then(step);
    this.leaseChain = run.catch(() => undefined);
    return run;
  }

  /**
   * Ends the session: mirrors what is pending (unless the document is gone), releases this
   * process's lease, leaves the other processes and frees the Yjs document.
   */
  async close(mirror: boolean, closeCode?: { code: number; reason: string }): Promise<void> {
    if (this.closed) return;
    // A leaving session extends its lease no more: should the lease have lapsed (a renewal late
    // under load), the document must not turn collab again after it read as rest.
    this.closing = true;
    if (mirror) {
      if (this.dirty) await this.flush().catch(() => undefined);
      else await this.chain;
    }
    this.closed = true;
    for (const conn of this.connections) {
      try {
        conn.socket.close(closeCode?.code ?? 1001, closeCode?.reason ?? 'collaborative session closed');
      } catch {
        // already closed
      }
    }
    this.connections.clear();
    await this.dispose();
  }

  private async dispose(): Promise<void> {
    this.closed = true;
    if (this.mirrorTimer) clearTimeout(this.mirrorTimer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    // This process's lease only: the document stays collab while another process holds one.
    await this.leaseStep(async () => {
      this.leaseReleased = true;
      if (!this.leaseUntil) return;
      await this.deps.leases.release(this.deps.fork(), this.documentId, this.deps.instanceId, this.deps.clock.now());
    }).catch((error: unknown) => this.deps.log.warn({ err: error, documentId: this.documentId }, 'could not release the collaborative lease'));
    await this.unsubscribe?.().catch(() => undefined);
    this.awareness.destroy();
    this.doc.destroy();
  }
}
