import type { PubSub } from '../../ports/pubsub.js';
import type { TrellisMetrics } from './metrics.js';

const pushKinds: Array<[prefix: string, kind: string]> = [
  ['realtime:user:', 'user'],
  ['realtime:app:', 'application'],
  ['realtime:hd:', 'hardware'],
];
const collabPrefix = 'trellis:collab:';

/** The realtime target kind a topic carries pushes for, `collab` for collaboration, or null. */
function topicFamily(topic: string): string | null {
  if (topic.startsWith(collabPrefix)) return 'collab';
  for (const [prefix, kind] of pushKinds) if (topic.startsWith(prefix)) return kind;
  return null;
}

/**
 * Wraps whichever PubSub is bound (embedded or an adapter) to count realtime pushes and
 * collaboration messages as they are published, without touching the modules that publish them.
 * A proxy, so the bound object still is what it was (`instanceof RedisPubSub` holds) and a PubSub
 * shared by two kernels counts in each kernel's registry only for that kernel's publishes.
 */
export function countingPubSub<T extends PubSub>(inner: T, metrics: TrellisMetrics): T {
  const publish: PubSub['publish'] = (topic, message) => {
    const family = topicFamily(topic);
    if (family === 'collab') metrics.collabMessages.inc();
    else if (family) metrics.pushes.inc({ kind: family });
    return inner.publish(topic, message);
  };
  return new Proxy(inner, {
    get(target, property) {
      if (property === 'publish') return publish;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
