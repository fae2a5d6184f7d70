import type { ServiceIdentifier } from 'inversify';

export type PubSubListener = (message: Uint8Array | string) => void;

/**
 * Cross-process fan-out of pushes and collaborative updates. A message published on a topic
 * reaches every subscriber of that topic in every process sharing the backend, the publisher's
 * own process included. Delivery is at most once; order is kept per publisher and topic.
 *
 * The embedded default is in-process; `@trellis/pubsub-redis` spans processes.
 */
export interface PubSub {
  publish(topic: string, message: Uint8Array | string): Promise<void>;
  /** Resolves once the subscription is live; the returned function unsubscribes. */
  subscribe(topic: string, listener: PubSubListener): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /**
   * Optional capability: true when every subscriber lives in this process (the in-process
   * PubSub), so a reader that gets this process's messages another way need not subscribe.
   */
  readonly local?: boolean;
  /** Optional capability: whether anyone listens on `topic` now (a publisher can skip building a message no one reads). */
  hasListeners?(topic: string): boolean;
}

export const pubSubServiceIdentifier: ServiceIdentifier<PubSub> = Symbol.for('@trellis/core/PubSub');

export class InProcessPubSub implements PubSub {
  readonly local = true;
  private readonly topics = new Map<string, Set<PubSubListener>>();

  async publish(topic: string, message: Uint8Array | string): Promise<void> {
    const listeners = this.topics.get(topic);
    if (!listeners) return;
    for (const listener of [...listeners]) {
      queueMicrotask(() => listener(message));
    }
  }

  /** Whether anyone listens on `topic` now (a publisher can skip building a message no one reads). */
  hasListeners(topic: string): boolean {
    return this.topics.has(topic);
  }

  async subscribe(topic: string, listener: PubSubListener): Promise<() => Promise<void>> {
    let listeners = this.topics.get(topic);
    if (!listeners) this.topics.set(topic, (listeners = new Set()));
    listeners.add(listener);
    return async () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.topics.delete(topic);
    };
  }

  async close(): Promise<void> {
    this.topics.clear();
  }
}
