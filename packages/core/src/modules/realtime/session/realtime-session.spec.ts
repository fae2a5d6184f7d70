import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { SocketLike } from '../../../kernel/ws/channel.js';
import { InProcessPubSub } from '../../../ports/pubsub.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import type { RpcMethodDefinition } from '../../../kernel/module.js';
import { TrellisError } from '../../../kernel/errors.js';
import { realtimeConfigSchema, type RealtimeConfig } from '../realtime.config.js';
import { ConnectionRegistry } from '../services/connection-registry.js';
import { PushHub } from '../services/push-hub.js';
import { buildMethodTables } from '../services/realtime-gateway.js';
import type { ChannelKind } from '../topics.js';
import { realtimeCloseCodes, RealtimeSession, resultResponse } from './realtime-session.js';

const principal = { kind: 'jwt', userId: 'u1', user: {} } as unknown as Principal;

function session(overrides: Partial<RealtimeConfig> = {}, options: { methods?: RpcMethodDefinition[]; authenticate?: () => Promise<Principal> } = {}) {
  const config = realtimeConfigSchema.parse(overrides, 'realtime', []) as RealtimeConfig;
  const trellis = { realtime: config } as unknown as TrellisConfig;
  const sent: string[] = [];
  const closes: Array<[number | undefined, string | undefined]> = [];
  const socket: SocketLike = {
    send: (data) => (sent.push(String(data)), true),
    close: (code, reason) => void closes.push([code, reason]),
    bufferedAmount: 0,
    remoteAddress: '127.0.0.1',
  };
  const registry = new ConnectionRegistry(trellis);
  const built = buildMethodTables(options.methods ?? []);
  let tableLookups = 0;
  // Counts how often the session looks its kind's table up.
  const tables = { get: (kind: ChannelKind) => (tableLookups++, built.get(kind)) } as unknown as ReadonlyMap<ChannelKind, ReadonlyMap<string, RpcMethodDefinition>>;
  const contexts: unknown[] = [];
  const s = new RealtimeSession(
    socket,
    {
      config,
      methods: tables,
      authenticate: options.authenticate ?? (async () => principal),
      resolveTarget: async () => null,
      hub: new PushHub(new InProcessPubSub(), trellis, pino({ level: 'silent' })),
      registry,
      context: (info) => {
        contexts.push(info);
        return { log: pino({ level: 'silent' }), get: () => undefined as never, em: undefined as never, session: info };
      },
      log: pino({ level: 'silent' }),
      watch: () => () => undefined,
    },
    { kind: 'user', targetId: 'u1', principal, token: 'token' },
  ).start();
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { s, sent, closes, registry, config, settle, contexts, tableLookups: () => tableLookups };
}

describe('RealtimeSession deadlines', () => {
  it('closes with 4401 when auth has not completed within authTimeoutMs', () => {
    const before = Date.now();
    const { s, closes, registry } = session({ authTimeoutMs: 1_000 });
    s.checkDeadlines(before + 999);
    expect(closes).toEqual([]);
    s.checkDeadlines(Date.now() + 1_000);
    expect(closes).toEqual([[realtimeCloseCodes.authTimeout, 'auth_timeout']]);
    expect(registry.size).toBe(0);
  });

  it('counts every message as a heartbeat and closes with 4408 after heartbeatTimeoutMs of silence', async () => {
    const { s, sent, closes, settle } = session({ heartbeatTimeoutMs: 5_000 });
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token: 't' }, id: 1 }), false);
    await settle();
    expect(JSON.parse(sent[0]!)).toMatchObject({ id: 1, result: { status: 'authenticated' } });
    const before = Date.now();
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'ping', id: 2 }), false);
    const after = Date.now();
    await settle();
    expect(JSON.parse(sent[1]!)).toEqual({ jsonrpc: '2.0', id: 2, result: 'pong' });
    s.checkDeadlines(before + 4_999);
    expect(closes).toEqual([]);
    s.checkDeadlines(after + 5_000);
    expect(closes).toEqual([[realtimeCloseCodes.heartbeatTimeout, 'heartbeat_timeout']]);
  });

  it('closes with 1009 when a message passes maxMessageBytes, whatever the transport let through', () => {
    const { s, closes } = session({ maxMessageBytes: 1_024 });
    s.onMessage(new Uint8Array(1_025), true);
    expect(closes).toEqual([[1009, 'message_too_big']]);
  });

  it('holds a place in the per-user limit until it closes', () => {
    const first = session({ maxConnectionsPerUser: 1 });
    expect(first.closes).toEqual([]);
    const fake = { kind: 'user' as const, targetId: 'u1', credentialIds: [], checkDeadlines: () => undefined, close: () => undefined };
    expect(first.registry.add(fake)).toBe(false);
    first.s.onClose(1000, '');
    expect(first.registry.add(fake)).toBe(true);
    expect(first.registry.size).toBe(1);
  });
});

describe('RealtimeSession dispatch', () => {
  const request = (method: string, id: number | string | null, params?: unknown) => JSON.stringify({ jsonrpc: '2.0', method, id, ...(params === undefined ? {} : { params }) });
  const methods: RpcMethodDefinition[] = [
    { channels: ['user'], method: 'now', handler: (params) => ({ now: 42, params }) },
    { channels: ['user'], method: 'later', handler: async () => ({ later: true }) },
    { channels: ['user'], method: 'fails', handler: () => { throw new TrellisError('not_found', 'thing_not_found', 'No such thing.'); } },
    { channels: ['user'], method: 'broken', handler: () => { throw new Error('secret detail'); } },
  ];

  async function authenticated() {
    const it = session({}, { methods });
    it.s.onMessage(request('auth', 1, { token: 't' }), false);
    await it.settle();
    expect(JSON.parse(it.sent[0]!)).toMatchObject({ id: 1, result: { status: 'authenticated' } });
    it.sent.length = 0;
    return it;
  }

  it('answers ping before onMessage returns, before and after auth', async () => {
    const { s, sent } = session();
    s.onMessage(request('ping', 7), false);
    expect(sent).toEqual(['{"jsonrpc":"2.0","id":7,"result":"pong"}']);
    s.onMessage(request('auth', 8, { token: 't' }), false);
    await new Promise((resolve) => setImmediate(resolve));
    s.onMessage(request('ping', 'x'), false);
    expect(sent.at(-1)).toBe('{"jsonrpc":"2.0","id":"x","result":"pong"}');
  });

  it('answers a synchronous module method before onMessage returns, an asynchronous one after it settles', async () => {
    const { s, sent, settle } = await authenticated();
    s.onMessage(request('now', 2, { a: 1 }), false);
    expect(sent).toEqual([JSON.stringify({ jsonrpc: '2.0', id: 2, result: { now: 42, params: { a: 1 } } })]);
    s.onMessage(request('later', 3), false);
    expect(sent).toHaveLength(1);
    await settle();
    expect(JSON.parse(sent[1]!)).toEqual({ jsonrpc: '2.0', id: 3, result: { later: true } });
  });

  it('answers errors synchronously too: unknown method, TrellisError, unexpected error (hidden), invalid request, parse error', async () => {
    const { s, sent } = await authenticated();
    s.onMessage(request('nope', 1), false);
    s.onMessage(request('fails', 2), false);
    s.onMessage(request('broken', 3), false);
    s.onMessage('{"jsonrpc":"1.0","method":"ping","id":4}', false);
    s.onMessage('{not json', false);
    const answers = sent.map((text) => JSON.parse(text));
    expect(answers.map((a) => [a.id, a.error.code, a.error.data.error])).toEqual([
      [1, -32601, 'method_not_found'],
      [2, expect.any(Number), 'thing_not_found'],
      [3, -32603, 'internal_error'],
      [4, -32600, 'invalid_request'],
      [null, -32700, 'parse_error'],
    ]);
    expect(sent.join('')).not.toContain('secret detail');
  });

  it('answers nothing to notifications, synchronous or not', async () => {
    const { s, sent, settle } = await authenticated();
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'ping' }), false);
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'now' }), false);
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'later' }), false);
    s.onMessage(JSON.stringify({ jsonrpc: '2.0', method: 'broken' }), false);
    await settle();
    expect(sent).toEqual([]);
  });

  it('looks the method table of its channel up once per socket, not per message', async () => {
    const { s, settle, tableLookups } = await authenticated();
    const before = tableLookups();
    expect(before).toBe(1);
    for (let i = 0; i < 5; i++) s.onMessage(request('now', i), false);
    s.onMessage(request('later', 9), false);
    await settle();
    expect(tableLookups()).toBe(before);
  });

  it('serializes a result once: toJSON runs once per answer', async () => {
    let calls = 0;
    const result = { toJSON: () => (calls++, { ok: true }) };
    const it = session({}, { methods: [{ channels: ['user'], method: 'once', handler: () => result }] });
    it.s.onMessage(request('auth', 1, { token: 't' }), false);
    await it.settle();
    it.s.onMessage(request('once', 2), false);
    expect(calls).toBe(1);
    expect(JSON.parse(it.sent[1]!)).toEqual({ jsonrpc: '2.0', id: 2, result: { ok: true } });
  });

  it('hands each call a context with its session info', async () => {
    const { s, contexts } = await authenticated();
    s.onMessage(request('now', 1), false);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toMatchObject({ kind: 'user', targetId: 'u1', userId: 'u1', authenticated: true });
  });

  it('answers a batch in order as one frame, joining synchronous and asynchronous answers', async () => {
    const { s, sent, settle } = await authenticated();
    s.onMessage(JSON.stringify([JSON.parse(request('later', 1)), JSON.parse(request('ping', 2)), { jsonrpc: '2.0', method: 'ping' }, JSON.parse(request('now', 3))]), false);
    await settle();
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!).map((a: { id: number }) => a.id)).toEqual([1, 2, 3]);
  });

  it('holds messages that arrive during auth until its reply went out', async () => {
    let release!: () => void;
    const { s, sent, settle } = session({}, { methods, authenticate: () => new Promise<Principal>((resolve) => (release = () => resolve(principal))) });
    s.onMessage(request('auth', 1, { token: 't' }), false);
    s.onMessage(request('now', 2), false);
    s.onMessage(request('ping', 3), false);
    expect(sent).toEqual([]);
    release();
    await settle();
    expect(sent.map((text) => JSON.parse(text).id)).toEqual([1, 2, 3]);
    expect(JSON.parse(sent[1]!).result).toEqual({ now: 42 });
  });

  it('refuses module methods before auth, synchronously', () => {
    const { s, sent } = session({}, { methods });
    s.onMessage(request('now', 1), false);
    expect(JSON.parse(sent[0]!).error).toMatchObject({ code: -32001, data: { reason: 'not_authenticated' } });
  });

  it('answers an internal error for a result JSON cannot hold', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const it = session({}, { methods: [{ channels: ['user'], method: 'cycle', handler: () => cyclic }] });
    it.s.onMessage(request('auth', 1, { token: 't' }), false);
    await it.settle();
    it.s.onMessage(request('cycle', 2), false);
    expect(JSON.parse(it.sent[1]!)).toMatchObject({ id: 2, error: { code: -32603 } });
  });
});

describe('resultResponse', () => {
  it('writes the bytes JSON.stringify writes for the response object', () => {
    for (const id of [0, 1, -5, 2.5, 'abc', 'q"uote', null]) {
      for (const result of ['pong', null, undefined, 0, '', { a: [1, { b: 'c' }] }, [1, 2], 'ü\u2028', true]) {
        expect(resultResponse(id, result)).toBe(JSON.stringify({ jsonrpc: '2.0', id, result: result === undefined ? null : result }));
      }
    }
  });
});

describe('RealtimeSession output', () => {
  function withSocket(sendResult: boolean, buffered: number) {
    const config = realtimeConfigSchema.parse({}, 'realtime', []) as RealtimeConfig;
    const trellis = { realtime: config } as unknown as TrellisConfig;
    const sent: string[] = [];
    const closes: Array<[number | undefined, string | undefined]> = [];
    let reads = 0;
    const socket: SocketLike = {
      send: (data) => (sent.push(String(data)), sendResult),
      close: (code, reason) => void closes.push([code, reason]),
      get bufferedAmount() {
        reads++;
        return buffered;
      },
      remoteAddress: '127.0.0.1',
    };
    const s = new RealtimeSession(
      socket,
      {
        config,
        methods: new Map(),
        authenticate: async () => principal,
        resolveTarget: async () => null,
        hub: new PushHub(new InProcessPubSub(), trellis, pino({ level: 'silent' })),
        registry: new ConnectionRegistry(trellis),
        context: (info) => ({ log: pino({ level: 'silent' }), get: () => undefined as never, em: undefined as never, session: info }),
        log: pino({ level: 'silent' }),
        watch: () => () => undefined,
      },
      { kind: 'user', targetId: 'u1', principal, token: 'token' },
    ).start();
    return { s, sent, closes, reads: () => reads };
  }

  it('reads the send queue only when a send did not go straight out', () => {
    const fast = withSocket(true, 0);
    fast.s.onMessage('{"jsonrpc":"2.0","method":"ping","id":1}', false);
    expect(fast.sent).toHaveLength(1);
    expect(fast.reads()).toBe(0);
  });

  it('closes a slow consumer (4503) when a queued send leaves more than 1 MiB waiting', () => {
    const slow = withSocket(false, 2 << 20);
    slow.s.onMessage('{"jsonrpc":"2.0","method":"ping","id":1}', false);
    expect(slow.closes).toEqual([[realtimeCloseCodes.slowConsumer, 'slow_consumer']]);
    const queued = withSocket(false, 1024);
    queued.s.onMessage('{"jsonrpc":"2.0","method":"ping","id":1}', false);
    expect(queued.closes).toEqual([]);
  });
});
