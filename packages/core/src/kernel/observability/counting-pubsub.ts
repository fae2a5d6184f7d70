import type { PubSub, PubSubListener } from '../../ports/pubsub.js';
import type { TrellisMetrics } from './metrics.js';

const pushKinds: Array<[prefix: string, kind: string]> = [
  ['realtime:user:', 'user'],
  ['realtime:app:', 'application'],
  ['realtime:hd:', 'hardware'],
];
const collabPrefix = 'trellis:collab:';

/**
 * Wraps whichever PubSub is bound (embedded or an adapter) to count realtime pushes and
 * collaboration messages as they are published, without touching the modules that publish them.
 */
export class CountingPubSub implements PubSub {
  constructor(
    private readonly inner: PubSub,
    private readonly metrics: TrellisMetrics,
  ) {}

  publish(topic: string, message: Uint8Array | string): Promise<void> {
    if (topic.startsWith(collabPrefix)) this.metrics.collabMessages.inc();
    else {
      for (const [prefix, kind] of pushKinds) {
        if (topic.startsWith(prefix)) {
          this.metrics.pushes.inc({ kind });
          break;
        }
      }
    }
    return this.inner.publish(topic, message);
  }

  subscribe(topic: string, listener: PubSubListener): Promise<() => Promise<void>> {
    return this.inner.subscribe(topic, listener);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
