import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { SocketLike } from '../../../kernel/ws/channel.js';
import { InProcessPubSub } from '../../../ports/pubsub.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { realtimeConfigSchema, type RealtimeConfig } from '../realtime.config.js';
import { ConnectionRegistry } from '../services/connection-registry.js';
import { PushHub } from '../services/push-hub.js';
import { realtimeCloseCodes, RealtimeSession } from './realtime-session.js';

const principal = { kind: 'jwt', userId: 'u1', user: {} } as unknown as Principal;

function session(overrides: Partial<RealtimeConfig> = {}) {
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
  const s = new RealtimeSession(
    socket,
    {
      config,
      methods: new Map(),
      authenticate: async () => principal,
      resolveTarget: async () => null,
      hub: new PushHub(new InProcessPubSub(), trellis, pino({ level: 'silent' })),
      registry,
      context: () => ({ log: pino({ level: 'silent' }), get: () => undefined as never, em: undefined as never }),
      log: pino({ level: 'silent' }),
      watch: () => () => undefined,
    },
    { kind: 'user', targetId: 'u1', principal, token: 'token' },
  ).start();
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { s, sent, closes, registry, config, settle };
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
