import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { entityManagerServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { inTransaction } from '../../../kernel/transaction.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { Conversation } from '../entities/conversation.entity.js';
import { ConversationEventBatch, type ConversationEventRecord, type ConversationEventType } from '../entities/conversation-event.entity.js';

/**
 * The one PubSub topic of every conversation's events: one message per stored batch, whatever the
 * number of members; each process hands it to its own readers (SSE followers, members' sockets).
 */
export const conversationEventsTopic = 'conversations:events';

/** A stored batch as it travels on the topic: the conversation, its members, the events. */
export interface ConversationEventMessage {
  convId: string;
  members: string[];
  events: ConversationEventRecord[];
}

export type ConversationEventListener = (message: ConversationEventMessage) => void;

/** Events a writer holds before its producer waits for the log to catch up. */
const HIGH_WATER = 256;
/** How long a hole in the live tail may stay unfilled before the reader moves past it. */
const GAP_WAIT_MS = 3_000;
/** Live events a reader holds before it drops them and reads the log instead. */
const LIVE_MAX = 10_000;
/** Batches read from the log at a time. */
const PAGE = 50;

export interface FollowOptions {
  /** Send the events after this sequence number (0: the whole log). */
  after: number;
  signal?: AbortSignal;
  /** How long the live tail may stay quiet before the log is read again (a lost PubSub message). */
  pollMs?: number;
}

/**
 * The event log of conversation turns, shaped like a run's: `append` through a writer that numbers
 * events at the source, publishes them once per tick and stores them in batches, and
 * `follow(convId, { after, signal })`, which answers the stored events after `after` and then the
 * live tail, each sequence number exactly once and in order, to the end of a turn.
 */
@injectable()
export class TurnLog {
  private readonly listeners = new Map<string, Set<ConversationEventListener>>();
  private readonly everything = new Set<ConversationEventListener>();
  private subscription: Promise<() => Promise<void>> | null = null;

  constructor(
    @inject(entityManagerServiceIdentifier) private readonly root: EntityManager,
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {}

  /** The sequence number of the conversation's last stored event (0: none). */
  async lastSeq(em: EntityManager, convId: string): Promise<number> {
    const last = await em.findOne(ConversationEventBatch, { conversation: convId }, { orderBy: { seq: 'desc' }, fields: ['lastSeq'] });
    return last?.lastSeq ?? 0;
  }

  /** A writer for one turn, numbering after `after` (the turn holds the conversation, so no one else writes). */
  writer(convId: string, turnId: string, after: number, members: string[]): TurnWriter {
    return new TurnWriter(convId, turnId, after, members, {
      persist: (events, within) =>
        inTransaction(this.root.fork(), async (tx) => {
          await this.insert(tx, convId, events);
          await within?.(tx);
        }),
      publish: (events) => this.publish(convId, members, events),
    });
  }

  /**
   * Appends events outside a turn (a lost turn closed by another process), numbered from the
   * stored last inside one transaction with `within`'s writes; nothing is stored when `within`
   * answers false. Only safe while no turn writes: `within` releases the conversation's lost turn.
   */
  async appendWithin(convId: string, members: string[], events: Omit<ConversationEventRecord, 'seq'>[], within: (tx: EntityManager) => Promise<boolean>): Promise<boolean> {
    let stored: ConversationEventRecord[] = [];
    const done = await inTransaction(this.root.fork(), async (tx) => {
      if (!(await within(tx))) return false;
      const after = await this.lastSeq(tx, convId);
      stored = events.map((event, i) => ({ ...event, seq: after + 1 + i }));
      await this.insert(tx, convId, stored);
      return true;
    });
    if (done) await this.publish(convId, members, stored);
    return done;
  }

  private async insert(tx: EntityManager, convId: string, events: ConversationEventRecord[]): Promise<void> {
    tx.create(ConversationEventBatch, {
      id: this.ids.next(),
      conversation: tx.getReference(Conversation, convId),
      seq: events[0]!.seq,
      lastSeq: events.at(-1)!.seq,
      events,
    } as unknown as ConversationEventBatch);
    await tx.flush();
  }

  private async publish(convId: string, members: string[], events: ConversationEventRecord[]): Promise<void> {
    const message: ConversationEventMessage = { convId, members, events };
    await this.pubsub.publish(conversationEventsTopic, JSON.stringify(message)).catch((error: unknown) => this.log.warn({ err: error, convId }, 'publishing conversation events failed'));
  }

  /** Calls `listener` with every batch of every conversation that reaches this process (the members' sockets). */
  async onEvery(listener: ConversationEventListener): Promise<() => void> {
    await this.subscribe();
    this.everything.add(listener);
    return () => this.everything.delete(listener);
  }

  /** Stops listening on the topic (kernel stop). */
  async close(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = null;
    if (subscription) await (await subscription.catch(() => async () => undefined))();
  }

  private subscribe(): Promise<() => Promise<void>> {
    this.subscription ??= this.pubsub.subscribe(conversationEventsTopic, (raw) => this.receive(raw)).catch((error: unknown) => {
      this.subscription = null;
      throw error;
    });
    return this.subscription;
  }

  private receive(raw: string | Uint8Array): void {
    let message: ConversationEventMessage;
    try {
      message = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as ConversationEventMessage;
      if (typeof message.convId !== 'string' || !Array.isArray(message.events)) return;
    } catch {
      return;
    }
    for (const listener of [...(this.listeners.get(message.convId) ?? []), ...this.everything]) {
      try {
        listener(message);
      } catch (error) {
        this.log.warn({ err: error, convId: message.convId }, 'a conversation event listener failed');
      }
    }
  }

  /**
   * Deletes the log's batches stored before `cutoff`, except each conversation's newest (numbering
   * goes on after it): `limit` batches at most per call. Returns how many were deleted.
   */
  async prune(cutoff: Date, limit = 1_000): Promise<number> {
    const em = this.root.fork();
    const old = await em.find(ConversationEventBatch, { createdAt: { $lt: cutoff } }, { fields: ['id', 'conversation', 'lastSeq'], orderBy: { createdAt: 'asc' }, limit });
    const byConversation = new Map<string, Array<{ id: string; lastSeq: number }>>();
    for (const batch of old) {
      const convId = batch.conversation.id;
      byConversation.set(convId, [...(byConversation.get(convId) ?? []), { id: batch.id, lastSeq: batch.lastSeq }]);
    }
    let deleted = 0;
    for (const [convId, batches] of byConversation) {
      const newest = await this.lastSeq(em, convId);
      const ids = batches.filter((batch) => batch.lastSeq < newest).map((batch) => batch.id);
      if (ids.length) deleted += await em.nativeDelete(ConversationEventBatch, { id: { $in: ids } });
    }
    return deleted;
  }

  /** The stored events after `after`, up to a page of batches. */
  async load(convId: string, after: number): Promise<ConversationEventRecord[]> {
    const rows = await this.root.fork().find(ConversationEventBatch, { conversation: convId, lastSeq: { $gt: after } }, { orderBy: { seq: 'asc' }, limit: PAGE, fields: ['events'] });
    return rows.flatMap((row) => row.events).filter((event) => event.seq > after);
  }

  /**
   * Follows the conversation's events from just after `options.after`: the log first, then the live tail
   * (a hole in it, or a quiet moment, is filled from the log). Ends after the first `turn-end`, or
   * when no turn holds the conversation and nothing more is stored.
   */
  async *follow(convId: string, options: FollowOptions): AsyncGenerator<ConversationEventRecord[]> {
    const { after } = options;
    const pollMs = options.pollMs ?? 1_000;
    const live: ConversationEventRecord[] = [];
    let wake: (() => void) | null = null;
    let mustFill = true;
    const listener: ConversationEventListener = (message) => {
      if (live.length + message.events.length > LIVE_MAX) {
        // A reader slower than the turn: the live tail is dropped and read from the log instead.
        live.length = 0;
        mustFill = true;
      } else live.push(...message.events);
      wake?.();
    };
    let set = this.listeners.get(convId);
    if (!set) this.listeners.set(convId, (set = new Set()));
    set.add(listener);
    const onAbort = () => wake?.();
    options.signal?.addEventListener('abort', onAbort);
    let last = after;
    try {
      // Events before the oldest kept batch were pruned (`ai.turns.logRetentionHours`): the reader
      // gets the log from there.
      const oldest = await this.root.fork().findOne(ConversationEventBatch, { conversation: convId }, { orderBy: { seq: 'asc' }, fields: ['seq'] });
      if (oldest && last < oldest.seq - 1) last = oldest.seq - 1;
      await this.subscribe();
      let quiet = 0;
      let lastLook = false;
      let stuckSince: number | undefined;
      for (;;) {
        const out: ConversationEventRecord[] = [];
        let ended = false;
        const take = (event: ConversationEventRecord) => {
          out.push(event);
          last = event.seq;
          ended = event.type === 'turn-end';
        };
        /**
         * The log after `last`, up to a `turn-end`, or up to where the live tail goes on: a reader
         * that joins a turn whose writer stores as fast as it reads would otherwise chase the log
         * to the turn's first quiet moment before sending anything.
         */
        const fill = async () => {
          for (let progressed = true; progressed && !ended; ) {
            progressed = false;
            for (const event of await this.load(convId, last)) {
              if (event.seq !== last + 1) continue;
              progressed = true;
              take(event);
              if (ended) return;
            }
            if (live.find((event) => event.seq > last)?.seq === last + 1) return;
          }
        };
        if (mustFill) {
          mustFill = false;
          await fill();
        }
        let stuck = false;
        while (live.length && !ended) {
          const event = live[0]!;
          if (event.seq <= last) {
            live.shift();
            continue;
          }
          if (event.seq > last + 1) {
            // A hole: what is missing is in the log, or about to be (events are published before they are stored).
            await fill();
            if (ended || live[0]!.seq <= last + 1) continue;
            stuckSince ??= Date.now();
            // A hole the log never fills (a batch its writer failed to store) is passed after a while.
            if (Date.now() - stuckSince < GAP_WAIT_MS) {
              stuck = true;
              break;
            }
          }
          stuckSince = undefined;
          live.shift();
          take(event);
        }
        if (out.length) {
          quiet = 0;
          lastLook = false;
          yield out;
        } else if (lastLook) {
          return;
        }
        if (ended || options.signal?.aborted) return;
        if (live.length && !stuck) continue;
        const timedOut = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), stuck ? 10 : pollMs);
          wake = () => {
            clearTimeout(timer);
            resolve(false);
          };
          if ((live.length && !stuck) || mustFill || options.signal?.aborted) wake();
        });
        wake = null;
        if (!timedOut) continue;
        // A quiet moment (or a hole): the log may hold what PubSub did not deliver.
        mustFill = true;
        // Nothing for a while and no turn holds the conversation: one last look, then the end.
        if (!stuck && ++quiet >= 3 && !(await this.turnRunning(convId))) lastLook = true;
      }
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      set.delete(listener);
      if (!set.size && this.listeners.get(convId) === set) this.listeners.delete(convId);
    }
  }

  /** Whether a turn holds the conversation now. */
  async turnRunning(convId: string): Promise<boolean> {
    const row = await this.root.fork().findOne(Conversation, { id: convId }, { fields: ['turnId'] });
    return !!row?.turnId;
  }
}

/** How a writer stores and publishes its batches. */
export interface TurnWriterIo {
  /** Stores one batch, with `within`'s writes in the same transaction. */
  persist(events: ConversationEventRecord[], within?: (tx: EntityManager) => Promise<void>): Promise<void>;
  publish(events: ConversationEventRecord[]): Promise<void>;
}

/**
 * Numbers one turn's events at the source, publishes them once per event-loop tick (the live tail
 * does not wait for the database) and stores them in batches: an event appended while a batch is
 * being stored joins the next one. A reader that sees a hole in the live tail waits for the log to
 * fill it. `append` answers a promise when the producer is too far ahead of the database.
 */
export class TurnWriter {
  private next: number;
  private pending: ConversationEventRecord[] = [];
  private unpublished: ConversationEventRecord[] = [];
  private publishing: NodeJS.Immediate | null = null;
  private writing: Promise<void> | null = null;
  private failure: unknown = null;

  constructor(
    readonly convId: string,
    readonly turnId: string,
    after: number,
    readonly members: string[],
    private readonly io: TurnWriterIo,
  ) {
    this.next = after + 1;
  }

  /** The sequence number of the last event appended. */
  get seq(): number {
    return this.next - 1;
  }

  append(type: ConversationEventType, msgId: string, content: unknown): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    const event = { seq: this.next++, type, turnId: this.turnId, msgId, content };
    this.pending.push(event);
    this.unpublished.push(event);
    this.publishing ??= setImmediate(() => this.publishNow());
    this.writing ??= this.drain();
    return this.pending.length >= HIGH_WATER ? this.flush() : undefined;
  }

  /** Resolves once every event appended so far is stored. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.failure) throw this.failure;
  }

  /**
   * Stores what is pending and `last` as the turn's final batch, with `within`'s writes in the
   * same transaction, and only then publishes `last` (the conversation is released as its last
   * events are stored, so whoever reads them may start the next turn).
   */
  async close(last: Array<{ type: ConversationEventType; msgId: string; content: unknown }>, within: (tx: EntityManager) => Promise<void>): Promise<void> {
    this.publishNow();
    await this.flush().catch(() => undefined);
    const final = last.map((e) => ({ seq: this.next++, type: e.type, turnId: this.turnId, msgId: e.msgId, content: e.content }));
    const batch = [...this.pending, ...final];
    this.pending = [];
    await this.io.persist(batch, within);
    await this.io.publish(final);
  }

  private publishNow(): void {
    if (this.publishing) clearImmediate(this.publishing);
    this.publishing = null;
    const batch = this.unpublished;
    this.unpublished = [];
    if (batch.length) void this.io.publish(batch);
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length && !this.failure) {
        const batch = this.pending;
        this.pending = [];
        await this.io.persist(batch);
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.writing = null;
    }
  }
}
