import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { InProcessPubSub } from '../../../ports/pubsub.js';
import { realtimeConfigSchema } from '../realtime.config.js';
import { encodeEnvelope, pushTopic } from '../topics.js';
import { PushHub } from './push-hub.js';

function hubWith(options: { resumeBufferSize?: number; resumeWindowMs?: number } = {}) {
  const pubsub = new InProcessPubSub();
  const realtime = realtimeConfigSchema.parse(options, 'realtime', []);
  const hub = new PushHub(pubsub, { realtime } as unknown as TrellisConfig, pino({ level: 'silent' }));
  const push = async (id: string, content: string) => {
    await pubsub.publish(pushTopic('user', id), encodeEnvelope({ method: 'system', params: { type: 't', content } }));
    await new Promise((resolve) => setImmediate(resolve)); // in-process delivery is a microtask away
  };
  return { hub, push, pubsub };
}

const contents = (frames: string[]) => frames.map((f) => (JSON.parse(f) as { params: { content: string; seq: number } }).params);

describe('PushHub', () => {
  afterEach(() => vi.useRealTimers());

  it('numbers the pushes of a target and hands every subscriber the same frame', async () => {
    const { hub, push } = hubWith();
    const a: string[] = [];
    const b: string[] = [];
    const first = await hub.attach('user', 'u1', { deliver: (f) => a.push(...f) });
    const second = await hub.attach('user', 'u1', { deliver: (f) => b.push(...f) });
    expect(first.epoch).toBe(second.epoch);
    expect(first.outcome).toEqual({ kind: 'fresh' });
    await push('u1', 'x');
    await push('u2', 'not mine');
    await push('u1', 'y');
    expect(a).toEqual(b);
    expect(contents(a)).toEqual([
      { type: 't', content: 'x', seq: 1 },
      { type: 't', content: 'y', seq: 2 },
    ]);
    expect(JSON.parse(a[0]!)).toMatchObject({ jsonrpc: '2.0', method: 'system' });
  });

  it('replays what a resuming subscriber missed, or says why it cannot', async () => {
    const { hub, push } = hubWith({ resumeBufferSize: 2 });
    const first = await hub.attach('user', 'u', { deliver: () => undefined });
    await push('u', 'a');
    first.detach();
    await push('u', 'b');
    await push('u', 'c');

    const resumed = await hub.attach('user', 'u', { deliver: () => undefined }, { epoch: first.epoch, lastSeq: 1 });
    expect(resumed.seq).toBe(3);
    expect(resumed.outcome.kind).toBe('resumed');
    expect(contents((resumed.outcome as { frames: string[] }).frames).map((p) => p.content)).toEqual(['b', 'c']);

    const upToDate = await hub.attach('user', 'u', { deliver: () => undefined }, { epoch: first.epoch, lastSeq: 3 });
    expect(upToDate.outcome).toEqual({ kind: 'resumed', frames: [] });
    expect((await hub.attach('user', 'u', { deliver: () => undefined }, { epoch: first.epoch, lastSeq: 0 })).outcome).toEqual({ kind: 'resync', reason: 'buffer_exceeded' });
    expect((await hub.attach('user', 'u', { deliver: () => undefined }, { epoch: first.epoch, lastSeq: 9 })).outcome).toEqual({ kind: 'resync', reason: 'seq_ahead' });
    expect((await hub.attach('user', 'u', { deliver: () => undefined }, { epoch: 'other', lastSeq: 1 })).outcome).toEqual({ kind: 'resync', reason: 'epoch_changed' });
  });

  it('drops a target\'s buffer and subscription when the resume window passes without sockets', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { hub, push } = hubWith({ resumeWindowMs: 1_000 });
    const first = await hub.attach('user', 'u', { deliver: () => undefined });
    await push('u', 'a');
    first.detach();
    vi.advanceTimersByTime(999);
    expect(hub.targets).toBe(1);
    const again = await hub.attach('user', 'u', { deliver: () => undefined });
    expect(again.epoch).toBe(first.epoch);
    again.detach();
    vi.advanceTimersByTime(1_000);
    expect(hub.targets).toBe(0);
    const fresh = await hub.attach('user', 'u', { deliver: () => undefined });
    expect(fresh.epoch).not.toBe(first.epoch);
    expect(fresh.seq).toBe(0);
  });

  it('releases at once with a zero window or after shutdown', async () => {
    const { hub } = hubWith({ resumeWindowMs: 0 });
    (await hub.attach('user', 'u', { deliver: () => undefined })).detach();
    expect(hub.targets).toBe(0);
    const other = hubWith();
    const attached = await other.hub.attach('user', 'u', { deliver: () => undefined });
    other.hub.shutdown();
    expect(other.hub.targets).toBe(1);
    attached.detach();
    expect(other.hub.targets).toBe(0);
  });

  it('sends the first push of a tick at once and batches the rest of the tick until the check phase', async () => {
    const { hub, pubsub } = hubWith();
    const calls: string[][] = [];
    await hub.attach('user', 'u', { deliver: (f) => calls.push([...f]) });
    const envelope = (content: string) => encodeEnvelope({ method: 'system', params: { type: 't', content } });
    const names = () => calls.map((frames) => contents(frames).map((p) => p.content));
    await pubsub.publish(pushTopic('user', 'u'), envelope('a'));
    // A lone push (a streamed delta) must not wait for the check phase: it is delivered as it arrives.
    expect(names()).toEqual([['a']]);
    await pubsub.publish(pushTopic('user', 'u'), envelope('b'));
    await pubsub.publish(pushTopic('user', 'u'), envelope('c'));
    expect(names()).toEqual([['a']]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(names()).toEqual([['a'], ['b', 'c']]);
    // The next tick starts afresh.
    await pubsub.publish(pushTopic('user', 'u'), envelope('d'));
    expect(names()).toEqual([['a'], ['b', 'c'], ['d']]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(names()).toEqual([['a'], ['b', 'c'], ['d']]);
    expect(contents(calls.flat()).map((p) => p.seq)).toEqual([1, 2, 3, 4]);
  });

  it('hands the later pushes of one tick to each subscriber in one call, and never twice to one that resumes meanwhile', async () => {
    const { hub, pubsub } = hubWith();
    const calls: string[][] = [];
    const first = await hub.attach('user', 'u', { deliver: (f) => calls.push([...f]) });
    const envelope = (content: string) => encodeEnvelope({ method: 'system', params: { type: 't', content } });
    await pubsub.publish(pushTopic('user', 'u'), envelope('a'));
    await pubsub.publish(pushTopic('user', 'u'), envelope('b'));
    await pubsub.publish(pushTopic('user', 'u'), envelope('c'));
    // All three are numbered now (a microtask each): "a" went out at once, "b" and "c" wait for the check phase.
    const late: string[] = [];
    const second = await hub.attach('user', 'u', { deliver: (f) => late.push(...f) }, { epoch: first.epoch, lastSeq: 0 });
    expect(second.outcome.kind).toBe('resumed');
    expect(contents((second.outcome as { frames: string[] }).frames).map((p) => p.content)).toEqual(['a', 'b', 'c']);
    // Attaching handed the waiting pushes to the first subscriber; the rest of the tick still batches.
    await pubsub.publish(pushTopic('user', 'u'), envelope('d'));
    await pubsub.publish(pushTopic('user', 'u'), envelope('e'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.map((frames) => contents(frames).map((p) => p.content))).toEqual([['a'], ['b', 'c'], ['d', 'e']]);
    expect(contents(late).map((p) => p.content)).toEqual(['d', 'e']);
  });

  it('ignores messages on its topics that are not push envelopes', async () => {
    const { hub, pubsub } = hubWith();
    const got: string[] = [];
    await hub.attach('user', 'u', { deliver: (f) => got.push(...f) });
    await pubsub.publish(pushTopic('user', 'u'), 'not json');
    await pubsub.publish(pushTopic('user', 'u'), JSON.stringify({ method: 'x', params: [1] }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).toEqual([]);
  });
});
