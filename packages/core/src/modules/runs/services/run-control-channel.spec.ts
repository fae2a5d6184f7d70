import { describe, expect, it } from 'vitest';
import { InProcessPubSub, type PubSubListener } from '../../../ports/pubsub.js';
import { runControlTopic } from './event-text.js';
import { RUN_CONTROL_TOPIC, RunControlChannel } from './run-control-channel.js';

/** The in-process PubSub, counting subscriptions, whose first `failures` subscribes fail. */
class CountingPubSub extends InProcessPubSub {
  subscribes: string[] = [];
  constructor(private failures = 0) {
    super();
  }
  override async subscribe(topic: string, listener: PubSubListener) {
    this.subscribes.push(topic);
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('redis is reconnecting');
    }
    return super.subscribe(topic, listener);
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('RunControlChannel', () => {
  it('subscribes once for every run of the process, and a cancel stops only the run it names', async () => {
    const pubsub = new CountingPubSub();
    const channel = new RunControlChannel(pubsub);
    const heard: string[] = [];
    const stops = await Promise.all(['r1', 'r2', 'r3'].map((id) => channel.listen(id, () => heard.push(id))));
    expect(pubsub.subscribes).toEqual([RUN_CONTROL_TOPIC]);

    await RunControlChannel.cancel(pubsub, 'r2');
    await settle();
    expect(heard).toEqual(['r2']);

    // A run that stopped listening hears nothing; the others still do.
    stops[0]!();
    await RunControlChannel.cancel(pubsub, 'r1');
    await RunControlChannel.cancel(pubsub, 'r3');
    await settle();
    expect(heard).toEqual(['r2', 'r3']);
    expect(pubsub.subscribes).toEqual([RUN_CONTROL_TOPIC]);
  });

  it('reaches a process of an earlier version, which listens on the run\'s own topic', async () => {
    const pubsub = new InProcessPubSub();
    const legacy: string[] = [];
    await pubsub.subscribe(runControlTopic('r1'), (message) => legacy.push(String(message)));
    await RunControlChannel.cancel(pubsub, 'r1');
    await settle();
    expect(legacy).toEqual(['cancel']);
  });

  it('ignores messages that are not a cancel, and a cancel of a run this process does not execute', async () => {
    const pubsub = new InProcessPubSub();
    const channel = new RunControlChannel(pubsub);
    let heard = 0;
    await channel.listen('r1', () => heard++);
    await pubsub.publish(RUN_CONTROL_TOPIC, 'pause r1');
    await pubsub.publish(RUN_CONTROL_TOPIC, 'cancel r10');
    await pubsub.publish(RUN_CONTROL_TOPIC, new TextEncoder().encode('cancel r1'));
    await settle();
    expect(heard).toBe(1);
  });

  it('fails the run whose subscription failed, and subscribes again for the next run', async () => {
    const pubsub = new CountingPubSub(1);
    const channel = new RunControlChannel(pubsub);
    let heard = 0;
    await expect(channel.listen('r1', () => heard++)).rejects.toThrow('redis is reconnecting');
    await channel.listen('r2', () => heard++);
    expect(pubsub.subscribes).toEqual([RUN_CONTROL_TOPIC, RUN_CONTROL_TOPIC]);
    // The failed run left no listener behind.
    await RunControlChannel.cancel(pubsub, 'r1');
    await RunControlChannel.cancel(pubsub, 'r2');
    await settle();
    expect(heard).toBe(1);
  });
});
