import { setTimeout as sleep } from 'node:timers/promises';
import { defineChannel, defineModule, defineRoute, Reply, TrellisError, UserSchema, type ChannelSession, type SocketLike, type TrellisModule } from '@trellis/core';

/** What the test routes and channels did, for the tests to look at. */
export class TransportProbe {
  readonly events: string[] = [];
  /** Items produced per stream id. */
  readonly produced = new Map<string, number>();
  /** Stream ids whose producer was stopped or finished (its `finally` ran). */
  readonly finished = new Set<string>();
  private readonly releases = new Map<string, () => void>();
  /** Per flood socket: how many sends returned false, and how many drains the session heard. */
  readonly flood = { sent: 0, refused: 0, drains: 0 };

  /** Lets `/test/slow?id=<id>` answer. */
  release(id: string): void {
    const release = this.releases.get(id);
    if (!release) throw new Error(`no slow request ${id} is waiting`);
    release();
  }

  waitForRelease(id: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      this.releases.set(id, resolve);
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  count(id: string): void {
    this.produced.set(id, (this.produced.get(id) ?? 0) + 1);
  }
}

/** A deterministic byte pattern, so a test can check every byte of a large body. */
export function patternBytes(length: number, offset = 0): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = (offset + i) % 251;
  return out;
}

const int = (value: unknown, fallback: number) => {
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : fallback;
};

/**
 * Test-only routes and channels, mounted next to the core modules:
 * - `GET /test/sse?count&id`, `GET /test/ndjson?count&id`: finite event streams;
 * - `GET /test/flood?lines&id`: a fast producer of 1 KB NDJSON lines (back-pressure);
 * - `GET /test/ticker?id`: an endless slow producer (disconnects, shutdown);
 * - `GET /test/burst?bytes&id`: a burst of bytes, then silence until released;
 * - `GET /test/slow?id`: answers once the test releases it, after a database read;
 * - `GET /test/whoami`: what the request context saw;
 * - `GET /test/big?bytes`, `GET /test/big-stream?bytes&chunk`: large bodies;
 * - channels `/test/echo` (max payload 1024 bytes; `?deny=forbidden|unauthenticated|boom`),
 *   `/test/rooms/:room` and `/test/flood`.
 */
export function transportTestModule(probe: TransportProbe): TrellisModule {
  const tags = ['Test'];
  return defineModule({
    name: 'transport-test',
    dependsOn: ['identity'],
    onStop() {
      probe.events.push('module-stopped');
    },
    routes: [
      defineRoute({
        method: 'GET',
        path: '/test/sse',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const q = ctx.query as Record<string, string>;
          const count = int(q['count'], 10);
          const id = q['id'] ?? 'sse';
          async function* events() {
            try {
              for (let i = 0; i < count; i++) {
                probe.count(id);
                yield { event: 'tick', id: String(i), data: { i, text: `event ${i}` } };
              }
              yield { event: 'done', data: { count } };
            } finally {
              probe.finished.add(id);
            }
          }
          return Reply.sse(events());
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/ndjson',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const q = ctx.query as Record<string, string>;
          const count = int(q['count'], 10);
          const id = q['id'] ?? 'ndjson';
          async function* items() {
            try {
              for (let i = 0; i < count; i++) {
                probe.count(id);
                yield { i };
              }
            } finally {
              probe.finished.add(id);
            }
          }
          return Reply.ndjson(items());
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/flood',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const q = ctx.query as Record<string, string>;
          const lines = int(q['lines'], 1000);
          const id = q['id'] ?? 'flood';
          async function* flood() {
            try {
              for (let i = 0; i < lines; i++) {
                probe.count(id);
                // 1 KB per line: the index, padded.
                yield `${String(i).padStart(10, '0')} ${'x'.repeat(1012)}\n`;
              }
            } finally {
              probe.finished.add(id);
            }
          }
          return Reply.stream(flood(), 'text/plain; charset=utf-8');
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/ticker',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const id = (ctx.query as Record<string, string>)['id'] ?? 'ticker';
          async function* ticks() {
            try {
              for (let i = 0; ; i++) {
                probe.count(id);
                yield { event: 'tick', data: { i } };
                await sleep(10);
              }
            } finally {
              probe.finished.add(id);
            }
          }
          return Reply.sse(ticks());
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/burst',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const q = ctx.query as Record<string, string>;
          const bytes = int(q['bytes'], 1024);
          const id = q['id'] ?? 'burst';
          // A burst, then silence until the test releases it: what the client already has a
          // right to must not wait for the next item.
          async function* burst() {
            try {
              for (let offset = 0; offset < bytes; offset += 65_536) {
                probe.count(id);
                yield patternBytes(Math.min(65_536, bytes - offset), offset);
              }
              await probe.waitForRelease(id, ctx.signal);
              yield Buffer.from('END');
            } finally {
              probe.finished.add(id);
            }
          }
          return Reply.stream(burst(), 'application/octet-stream');
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/slow',
        tags,
        hidden: true,
        auth: 'none',
        async handler(ctx) {
          const id = (ctx.query as Record<string, string>)['id'] ?? 'slow';
          probe.events.push(`slow-entered:${id}`);
          await probe.waitForRelease(id, ctx.signal);
          // The database is still open while a request drains.
          const users = await ctx.em.count(UserSchema, {});
          probe.events.push(`slow-finished:${id}`);
          return { id, users };
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/whoami',
        tags,
        hidden: true,
        auth: 'none',
        handler: (ctx) => ({ ip: ctx.ip, userAgent: ctx.userAgent, method: ctx.method, headers: ctx.headers }),
      }),
      defineRoute({
        method: 'GET',
        path: '/test/big',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const bytes = int((ctx.query as Record<string, string>)['bytes'], 1024);
          return Reply.raw(patternBytes(bytes), 'application/octet-stream');
        },
      }),
      defineRoute({
        method: 'GET',
        path: '/test/big-stream',
        tags,
        hidden: true,
        auth: 'none',
        handler(ctx) {
          const q = ctx.query as Record<string, string>;
          const bytes = int(q['bytes'], 1024);
          const chunk = Math.max(1, int(q['chunk'], 1000));
          async function* parts() {
            for (let offset = 0; offset < bytes; offset += chunk) yield patternBytes(Math.min(chunk, bytes - offset), offset);
          }
          return Reply.stream(parts(), 'application/octet-stream');
        },
      }),
    ],
    channels: [
      defineChannel({
        name: 'test-echo',
        path: '/test/echo',
        maxPayloadBytes: 1024,
        accept(request) {
          const deny = request.query.get('deny');
          if (deny === 'forbidden') throw new TrellisError('forbidden', 'channel_forbidden', 'Not for you.');
          if (deny === 'unauthenticated') throw new TrellisError('unauthenticated', 'missing_credentials', 'Who are you?', { headers: { 'www-authenticate': 'Bearer' } });
          if (deny === 'boom') throw new Error('secret internal detail');
          return (socket) => echoSession(socket, '');
        },
      }),
      defineChannel({
        name: 'test-rooms',
        path: '/test/rooms/:room',
        accept(request) {
          return (socket) => echoSession(socket, `${request.params['room']}:`);
        },
      }),
      defineChannel({
        name: 'test-flood',
        path: '/test/flood',
        accept() {
          return (socket) => floodSession(socket, probe);
        },
      }),
    ],
  });
}

function echoSession(socket: SocketLike, prefix: string): ChannelSession {
  return {
    onMessage(data, isBinary) {
      if (!isBinary && data === 'close-me') {
        socket.close(4000, 'closing as asked');
        return;
      }
      socket.send(isBinary ? data : `${prefix}${data as string}`, isBinary);
    },
    onClose() {},
  };
}

/** On "go": sends 64 KB messages until the socket reports a slow peer, then waits for drain. */
function floodSession(socket: SocketLike, probe: TransportProbe): ChannelSession {
  const message = Buffer.alloc(64 * 1024, 120);
  const pump = () => {
    for (let i = 0; i < 1000; i++) {
      probe.flood.sent++;
      if (!socket.send(message, true)) {
        probe.flood.refused++;
        return;
      }
    }
  };
  return {
    onMessage(data) {
      if (data === 'go') pump();
      if (data === 'bye') socket.close(1000, 'bye');
    },
    onDrain() {
      probe.flood.drains++;
      socket.send('drained', false);
    },
    onClose() {},
  };
}
