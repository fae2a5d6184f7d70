import { randomBytes } from 'node:crypto';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { configServiceIdentifier, loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { realtimeSection } from '../realtime.config.js';
import { decodeEnvelope, encodeEnvelope, pushTopic, type ChannelKind } from '../topics.js';

/** A socket (or anything else) that receives the pushes of one target. */
export interface PushSubscriber {
  /**
   * Encoded JSON-RPC notifications, `seq` already in their params, oldest first. The first push
   * of an event-loop tick comes alone, as soon as it arrives; the pushes that follow it in the
   * same tick come together at the check phase, so a socket can write them together.
   */
  deliver(frames: readonly string[]): void;
}

/** What a reconnecting client says it has seen. */
export interface ResumePoint {
  epoch: string;
  lastSeq: number;
}

export type ResyncReason = 'epoch_changed' | 'buffer_exceeded' | 'seq_ahead';

export type ResumeOutcome = { kind: 'fresh' } | { kind: 'resumed'; frames: string[] } | { kind: 'resync'; reason: ResyncReason };

export interface Attachment {
  /** Identifies this process's numbering of the target's pushes. */
  epoch: string;
  /** `seq` of the last push numbered before the subscriber joined; live pushes carry higher ones. */
  seq: number;
  outcome: ResumeOutcome;
  detach(): void;
}

/** Fixed-size ring of the most recent encoded pushes of one target. */
class Ring {
  private readonly items: string[];
  private start = 0;
  size = 0;

  constructor(readonly capacity: number) {
    this.items = new Array<string>(capacity);
  }

  push(item: string): void {
    if (this.capacity === 0) return;
    if (this.size < this.capacity) {
      this.items[(this.start + this.size) % this.capacity] = item;
      this.size++;
    } else {
      this.items[this.start] = item;
      this.start = (this.start + 1) % this.capacity;
    }
  }

  /** The newest `count` items, oldest first. */
  last(count: number): string[] {
    const out: string[] = [];
    for (let i = this.size - count; i < this.size; i++) out.push(this.items[(this.start + i) % this.capacity]!);
    return out;
  }
}

class TargetStream {
  readonly epoch = randomBytes(9).toString('base64url');
  seq = 0;
  readonly subscribers = new Set<PushSubscriber>();
  /** Attach calls waiting for the subscription: the stream must not be torn down under them. */
  attaching = 0;
  dead = false;
  ready!: Promise<void>;
  unsubscribe?: () => Promise<void>;
  linger?: NodeJS.Timeout;
  /**
   * Numbered pushes not yet handed to the subscribers: those that arrived after the first one of
   * this tick (they go out together at the next check phase). Empty whenever `batching` is false.
   */
  pending: string[] = [];
  /** A push was delivered in this tick and the check-phase flush is scheduled. */
  batching = false;

  constructor(
    readonly topic: string,
    readonly ring: Ring,
  ) {}
}

/**
 * The receiving side of pushes in one host process. For every user, application or device with
 * a socket here, it holds one PubSub subscription, numbers the pushes that arrive (`seq`, counted
 * per target and per `epoch`), keeps the newest `realtime.resumeBufferSize` of them, and hands
 * each to the target's sockets as one pre-encoded frame. The buffer outlives the last socket by
 * `realtime.resumeWindowMs`, so a client that reconnects in time gets what it missed.
 */
@injectable()
export class PushHub {
  private readonly streams = new Map<string, TargetStream>();
  private readonly bufferSize: number;
  private readonly windowMs: number;
  private closed = false;

  constructor(
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(configServiceIdentifier) config: TrellisConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
  ) {
    const section = realtimeSection(config);
    this.bufferSize = section.resumeBufferSize;
    this.windowMs = section.resumeWindowMs;
  }

  /** Number of targets this process currently holds a subscription (or a lingering buffer) for. */
  get targets(): number {
    return this.streams.size;
  }

  /**
   * Starts delivering the target's pushes to `subscriber`. With `resume`, also works out what the
   * subscriber missed: the buffered pushes after `lastSeq`, or a resync when they are gone.
   */
  async attach(kind: ChannelKind, id: string, subscriber: PushSubscriber, resume?: ResumePoint): Promise<Attachment> {
    const topic = pushTopic(kind, id);
    let stream = this.streams.get(topic);
    if (!stream) stream = this.open(topic);
    if (stream.linger) clearTimeout(stream.linger);
    stream.linger = undefined;
    stream.attaching++;
    try {
      await stream.ready;
    } catch (error) {
      stream.attaching--;
      this.maybeRelease(stream);
      throw error;
    }
    stream.attaching--;
    // From here to the return nothing awaits: a push is either counted in `seq` (and replayed if
    // asked for) or delivered live, never both and never neither. Pushes already numbered go to
    // the current subscribers first.
    this.flush(stream);
    const outcome = this.resumeOutcome(stream, resume);
    stream.subscribers.add(subscriber);
    const attached = stream;
    return {
      epoch: stream.epoch,
      seq: stream.seq,
      outcome,
      detach: () => {
        if (attached.subscribers.delete(subscriber)) this.maybeRelease(attached);
      },
    };
  }

  /**
   * Delivers one push to every socket of this kind held by this process (not through PubSub: it
   * concerns this process, such as its shutdown), numbered like any push and sent before this
   * returns.
   */
  announce(kind: ChannelKind, method: string, params: Record<string, unknown>): number {
    const prefix = pushTopic(kind, '');
    const message = encodeEnvelope({ method, params });
    let reached = 0;
    for (const stream of [...this.streams.values()]) {
      if (stream.dead || stream.subscribers.size === 0 || !stream.topic.startsWith(prefix)) continue;
      this.receive(stream, message);
      this.flush(stream);
      reached += stream.subscribers.size;
    }
    return reached;
  }

  /**
   * Delivers one push to the sockets of one target held by this process (not through PubSub: the
   * caller got it from a fan-out of its own), numbered like any push. False when this process
   * holds no socket (nor lingering buffer) of the target.
   */
  deliverLocal(kind: ChannelKind, id: string, method: string, params: Record<string, unknown>): boolean {
    const stream = this.streams.get(pushTopic(kind, id));
    if (!stream || stream.dead) return false;
    this.receive(stream, encodeEnvelope({ method, params }));
    return true;
  }

  /** Stops lingering: buffers without sockets are dropped now, the rest when their sockets close. */
  shutdown(): void {
    this.closed = true;
    for (const stream of [...this.streams.values()]) this.maybeRelease(stream);
  }

  private open(topic: string): TargetStream {
    const stream = new TargetStream(topic, new Ring(this.bufferSize));
    this.streams.set(topic, stream);
    stream.ready = this.pubsub
      .subscribe(topic, (message) => this.receive(stream, message))
      .then((unsubscribe) => {
        if (stream.dead) void unsubscribe().catch(() => undefined);
        else stream.unsubscribe = unsubscribe;
      })
      .catch((error: unknown) => {
        this.log.error({ err: error, topic }, 'realtime: subscribing to pushes failed');
        if (this.streams.get(topic) === stream) this.streams.delete(topic);
        stream.dead = true;
        throw error;
      });
    return stream;
  }

  private receive(stream: TargetStream, message: string | Uint8Array): void {
    if (stream.dead) return;
    const envelope = decodeEnvelope(message);
    if (!envelope || Array.isArray(envelope.params)) {
      this.log.warn({ topic: stream.topic }, 'realtime: ignored a message that is not a push envelope');
      return;
    }
    const seq = ++stream.seq;
    const frame = JSON.stringify({ jsonrpc: '2.0', method: envelope.method, params: { ...envelope.params, seq } });
    stream.ring.push(frame);
    if (stream.batching) {
      stream.pending.push(frame);
      return;
    }
    // The first push of a tick goes out at once: a streamed delta that arrives alone must not wait
    // for the check phase (that wait was the relay's latency tail). The pushes that follow it in
    // the same tick (a burst, a fan-out) are batched until then, one write per socket.
    stream.batching = true;
    setImmediate(() => {
      stream.batching = false;
      this.flush(stream);
    });
    this.hand(stream, [frame]);
  }

  /** Hands the pushes numbered and not yet delivered to every subscriber, in one call each. */
  private flush(stream: TargetStream): void {
    if (stream.dead || stream.pending.length === 0) return;
    const frames = stream.pending;
    stream.pending = [];
    this.hand(stream, frames);
  }

  private hand(stream: TargetStream, frames: readonly string[]): void {
    for (const subscriber of stream.subscribers) {
      try {
        subscriber.deliver(frames);
      } catch (error) {
        this.log.error({ err: error, topic: stream.topic }, 'realtime: delivering a push failed');
      }
    }
  }

  private resumeOutcome(stream: TargetStream, resume: ResumePoint | undefined): ResumeOutcome {
    if (!resume) return { kind: 'fresh' };
    if (resume.epoch !== stream.epoch) return { kind: 'resync', reason: 'epoch_changed' };
    if (resume.lastSeq > stream.seq) return { kind: 'resync', reason: 'seq_ahead' };
    const missed = stream.seq - resume.lastSeq;
    if (missed > stream.ring.size) return { kind: 'resync', reason: 'buffer_exceeded' };
    return { kind: 'resumed', frames: stream.ring.last(missed) };
  }

  private maybeRelease(stream: TargetStream): void {
    if (stream.dead || stream.subscribers.size > 0 || stream.attaching > 0) return;
    if (this.closed || this.windowMs === 0) {
      this.release(stream);
      return;
    }
    if (!stream.linger) {
      stream.linger = setTimeout(() => {
        stream.linger = undefined;
        if (stream.subscribers.size === 0 && stream.attaching === 0) this.release(stream);
      }, this.windowMs);
      stream.linger.unref();
    }
  }

  private release(stream: TargetStream): void {
    if (stream.linger) clearTimeout(stream.linger);
    stream.linger = undefined;
    stream.dead = true;
    stream.pending = [];
    if (this.streams.get(stream.topic) === stream) this.streams.delete(stream.topic);
    const unsubscribe = stream.unsubscribe;
    stream.unsubscribe = undefined;
    if (unsubscribe) {
      void unsubscribe().catch((error: unknown) => this.log.debug({ err: error, topic: stream.topic }, 'realtime: unsubscribing failed'));
    }
  }
}
