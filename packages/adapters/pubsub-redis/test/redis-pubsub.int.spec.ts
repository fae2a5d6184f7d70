import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { testRedisUrl } from '@trellis/test-support';

const url = testRedisUrl ?? '';

/** Collects what a listener receives and lets a test wait for a count. */
function collector() {
  const received: Array<string | Uint8Array> = [];
  let wake: (() => void) | undefined;
  return {
    received,
    listener: (message: string | Uint8Array) => {
      received.push(message);
      wake?.();
    },
    async waitFor(count: number): Promise<Array<string | Uint8Array>> {
      while (received.length < count) await new Promise<void>((resolve) => (wake = resolve));
      return received;
    },
  };
}

describe.skipIf(!testRedisUrl)('RedisPubSub (real Redis)', () => {
  const open: RedisPubSub[] = [];
  const make = (channelPrefix: string) => {
    const pubsub = new RedisPubSub({ url, channelPrefix });
    open.push(pubsub);
    return pubsub;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((p) => p.close()));
  });

  it('carries strings and bytes between two instances, keeping their type, in publish order', async () => {
    const prefix = `t:${randomUUID()}:`;
    const one = make(prefix);
    const two = make(prefix);
    const got = collector();
    await two.subscribe('topic', got.listener);
    await one.publish('topic', 'first ✓');
    await one.publish('topic', new Uint8Array([0, 1, 2, 255]));
    await one.publish('topic', '');
    const [text, bytes, empty] = await got.waitFor(3);
    expect(text).toBe('first ✓');
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect([...(bytes as Uint8Array)]).toEqual([0, 1, 2, 255]);
    expect(empty).toBe('');
  });

  it('reaches the publisher\'s own subscribers and every listener of a topic; unsubscribing stops delivery', async () => {
    const prefix = `t:${randomUUID()}:`;
    const pubsub = make(prefix);
    const a = collector();
    const b = collector();
    const offA = await pubsub.subscribe('x', a.listener);
    await pubsub.subscribe('x', b.listener);
    await pubsub.publish('x', 'one');
    await a.waitFor(1);
    await b.waitFor(1);
    await offA();
    await pubsub.publish('x', 'two');
    await b.waitFor(2);
    // The message after "two" on the same channel proves "two" was not held back for a.
    expect(a.received).toEqual(['one']);
    expect(b.received).toEqual(['one', 'two']);
  });

  it('keeps deployments with different prefixes apart', async () => {
    const topic = 'shared';
    const mine = make(`t:${randomUUID()}:`);
    const theirs = make(`t:${randomUUID()}:`);
    const heard = collector();
    const control = collector();
    await mine.subscribe(topic, heard.listener);
    await theirs.subscribe(topic, control.listener);
    await theirs.publish(topic, 'not for mine');
    await control.waitFor(1);
    await mine.publish(topic, 'for mine');
    expect(await heard.waitFor(1)).toEqual(['for mine']);
  });

  it('subscribes again after the last listener left and a new one came', async () => {
    const pubsub = make(`t:${randomUUID()}:`);
    const first = collector();
    const off = await pubsub.subscribe('again', first.listener);
    const unsubscribing = off();
    const second = collector();
    const subscribing = pubsub.subscribe('again', second.listener);
    await Promise.all([unsubscribing, subscribing]);
    await pubsub.publish('again', 'after');
    expect(await second.waitFor(1)).toEqual(['after']);
    expect(first.received).toEqual([]);
  });

  it('refuses bad options before connecting, and work after close', async () => {
    expect(() => new RedisPubSub({ url: 'http://127.0.0.1:6379' })).toThrow(/redis:\/\//);
    expect(() => new RedisPubSub({ url: 'not a url' })).toThrow(/not a URL/);
    const pubsub = make(`t:${randomUUID()}:`);
    await pubsub.close();
    await expect(pubsub.publish('x', 'y')).rejects.toThrow(/closed/);
  });
});
