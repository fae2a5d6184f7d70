import { Redis, type RedisOptions } from 'ioredis';
import type { PubSub, PubSubListener } from '@trellis/core';

export interface RedisPubSubOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://...` (TLS). Default `redis://127.0.0.1:6379`. */
  url?: string;
  /**
   * Put in front of every topic, so several deployments (or test runs) can share one Redis
   * without hearing each other. Default `trellis:`.
   */
  channelPrefix?: string;
  /** Further ioredis options (TLS, timeouts, retry strategy). */
  redis?: RedisOptions;
  /** Told about connection problems; ioredis reconnects (and resubscribes) by itself. */
  onError?: (error: Error) => void;
}

/** Marks the payload type on the wire: Redis keeps bytes only. */
const STRING = 0x73; // 's'
const BINARY = 0x62; // 'b'

interface TopicState {
  listeners: Set<PubSubListener>;
  /** Whether Redis has confirmed the SUBSCRIBE (and not yet an UNSUBSCRIBE). */
  active: boolean;
  /** SUBSCRIBE / UNSUBSCRIBE of this channel run one after the other. */
  op: Promise<void>;
}

/**
 * The PubSub port over Redis PUBLISH / SUBSCRIBE, so pushes and collaborative updates published
 * in one host process reach sockets held by every other process sharing the Redis server.
 *
 * Two connections: one publishes, one subscribes (a Redis connection in subscriber mode takes no
 * other commands). Each topic is one Redis channel (`channelPrefix` + topic), subscribed while
 * at least one listener of this process wants it. Delivery is Redis's: at most once, in publish
 * order per channel; messages published while the subscriber connection is down are lost (the
 * realtime module's `resync_required` covers that for pushes). Strings and bytes keep their type.
 *
 * ```ts
 * createHost({ adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: 'redis://10.0.0.5:6379' }))] });
 * ```
 */
export class RedisPubSub implements PubSub {
  private readonly prefix: string;
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly topics = new Map<string, TopicState>();
  private closed = false;

  /** Checks options before anything connects; throws with the offending field named. */
  static validateOptions(options: RedisPubSubOptions): void {
    if (options.url !== undefined) {
      let url: URL;
      try {
        url = new URL(options.url);
      } catch {
        throw new Error(`RedisPubSub: url "${options.url}" is not a URL (expected redis://host:port).`);
      }
      if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
        throw new Error(`RedisPubSub: url must start with redis:// or rediss://, got ${url.protocol}//.`);
      }
    }
    if (options.channelPrefix !== undefined && (typeof options.channelPrefix !== 'string' || options.channelPrefix.length > 200)) {
      throw new Error('RedisPubSub: channelPrefix must be a string of at most 200 characters.');
    }
  }

  constructor(options: RedisPubSubOptions = {}) {
    RedisPubSub.validateOptions(options);
    this.prefix = options.channelPrefix ?? 'trellis:';
    const url = options.url ?? 'redis://127.0.0.1:6379';
    const common: RedisOptions = { ...options.redis, autoResubscribe: true };
    const onError = options.onError ?? (() => undefined);
    this.publisher = new Redis(url, { ...common, connectionName: 'trellis-pub' });
    this.subscriber = new Redis(url, { ...common, connectionName: 'trellis-sub' });
    // Without listeners ioredis prints connection errors; the owner decides what to do with them.
    this.publisher.on('error', onError);
    this.subscriber.on('error', onError);
    this.subscriber.on('messageBuffer', (channel: Buffer, message: Buffer) => this.dispatch(channel.toString('utf8'), message));
  }

  async publish(topic: string, message: Uint8Array | string): Promise<void> {
    if (this.closed) throw new Error('RedisPubSub is closed.');
    const body = typeof message === 'string' ? Buffer.from(message, 'utf8') : Buffer.from(message.buffer, message.byteOffset, message.byteLength);
    const framed = Buffer.allocUnsafe(body.length + 1);
    framed[0] = typeof message === 'string' ? STRING : BINARY;
    body.copy(framed, 1);
    await this.publisher.publish(this.prefix + topic, framed);
  }

  async subscribe(topic: string, listener: PubSubListener): Promise<() => Promise<void>> {
    if (this.closed) throw new Error('RedisPubSub is closed.');
    const channel = this.prefix + topic;
    let state = this.topics.get(channel);
    if (!state) this.topics.set(channel, (state = { listeners: new Set(), active: false, op: Promise.resolve() }));
    const own = state;
    own.listeners.add(listener);
    try {
      await this.reconcile(channel, own);
    } catch (error) {
      own.listeners.delete(listener);
      await this.reconcile(channel, own).catch(() => undefined);
      throw error;
    }
    return async () => {
      if (!own.listeners.delete(listener)) return;
      await this.reconcile(channel, own);
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.topics.clear();
    await Promise.allSettled([this.subscriber.quit(), this.publisher.quit()]);
  }

  /** Brings Redis in line with whether this process still has listeners for the channel. */
  private reconcile(channel: string, state: TopicState): Promise<void> {
    const run = async () => {
      if (this.closed) return;
      const wanted = state.listeners.size > 0;
      if (wanted && !state.active) {
        await this.subscriber.subscribe(channel);
        state.active = true;
      } else if (!wanted && state.active) {
        state.active = false;
        await this.subscriber.unsubscribe(channel);
      }
      if (state.listeners.size === 0 && !state.active && this.topics.get(channel) === state) this.topics.delete(channel);
    };
    state.op = state.op.then(run, run);
    return state.op;
  }

  private dispatch(channel: string, message: Buffer): void {
    const state = this.topics.get(channel);
    if (!state || state.listeners.size === 0) return;
    let payload: string | Uint8Array;
    if (message[0] === BINARY) payload = new Uint8Array(message.buffer, message.byteOffset + 1, message.length - 1);
    else if (message[0] === STRING) payload = message.toString('utf8', 1);
    else payload = message.toString('utf8'); // published by something else than this adapter
    for (const listener of [...state.listeners]) {
      try {
        listener(payload);
      } catch {
        // One listener's failure must not keep the message from the others.
      }
    }
  }
}
