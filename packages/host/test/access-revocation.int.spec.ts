import { randomUUID } from 'node:crypto';
import { JwtService, provide, pubSubServiceIdentifier, UserService } from '@trellis/core';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { sharedDatabase, startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { doc, eventually, paragraph } from './documents.fixtures.js';
import { WsProbe } from './support/realtime-clients.js';

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';


let counter = 0;

// Revocation reaches open sockets: a change made through one host process (uWebSockets.js) closes
// or downgrades the `/v3/collab` and `/v3/wss` sockets held by another (node:http), through Redis.
describe.each(testDatabases())('access revocation reaches open sockets on $name', (base) => {
  const db = sharedDatabase(base);
  const channelPrefix = `trellis-test:${process.pid}:${randomUUID()}:`;
  let a: TestHost;
  let b: TestHost;
  const providers: WebsocketProvider[] = [];

  beforeAll(async () => {
    const start = (transport: 'uws' | 'node') =>
      startTestHost(db, transport, {
        adapters: [provide(pubSubServiceIdentifier, new RedisPubSub({ url: redisUrl, channelPrefix }))],
        config: { collab: { mirrorDebounceMs: 20, mirrorMaxWaitMs: 200, leaseMs: 1500 } },
      });
    a = await start('uws');
    b = await start('node');
  });
  // Open sessions renew their lease on the shared database; close them between tests.
  afterEach(() => {
    for (const provider of providers.splice(0)) provider.destroy();
  });
  afterAll(async () => {
    for (const provider of providers) provider.destroy();
    await b?.close();
    await a?.close();
    await db.cleanup();
  });

  /**
   * Two processes writing one SQLite file may see SQLITE_BUSY (503 busy, Retry-After: 1) when a
   * transaction that read must write after the other process committed: setup steps retry it.
   */
  async function retried(host: TestHost, method: string, path: string, options: Parameters<TestHost['request']>[2] = {}) {
    for (let attempt = 0; ; attempt++) {
      const response = await host.request(method, path, options);
      if (response.status !== 503 || attempt >= 10) return response;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  const register = async (host: TestHost) => {
    const email = `revoke${++counter}-${process.pid}-${Date.now()}@example.com`;
    const response = await retried(host, 'POST', '/auth/register', { body: { email, password: 'correct horse battery' } });
    expect(response.status).toBe(201);
    return { token: response.body.token as string, userId: response.body.user.id as string, email };
  };

  /** A stock y-websocket client that records how its socket closed and does not reconnect. */
  async function collab(host: TestHost, documentId: string, token: string) {
    const ydoc = new Y.Doc();
    const provider = new WebsocketProvider(`${host.wsUrl}/v3/collab`, documentId, ydoc, {
      params: { token },
      WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
      disableBc: true,
    });
    providers.push(provider);
    const closed = new Promise<{ code: number; reason: string }>((resolve) => {
      provider.on('connection-close', (event: { code: number; reason: string } | null) => {
        const code = event?.code ?? 0;
        // 4400-4499 are final; anything else (1013 after a failed check) lets the client reconnect.
        if (code < 4400 || code > 4499) return;
        provider.shouldConnect = false;
        resolve({ code, reason: event?.reason ?? '' });
      });
    });
    await new Promise<void>((resolve) => provider.once('sync', () => resolve()));
    const fragment = ydoc.getXmlFragment('default');
    const append = (text: string) =>
      ydoc.transact(() => {
        const element = new Y.XmlElement('paragraph');
        fragment.push([element]);
        element.setAttribute('id', `p-${randomUUID()}`);
        element.insert(0, [new Y.XmlText(text)]);
      });
    return { provider, ydoc, fragment, closed, append };
  }

  /** A team of an owner and a member, a project of the given access in it, and a document. */
  async function teamDocument(access: 'team' | 'public' = 'team') {
    const owner = await register(a);
    const member = await register(a);
    const team = await retried(a, 'POST', '/teams', { token: owner.token, body: { name: `Team ${++counter}` } });
    expect(team.status).toBe(201);
    const teamId = (team.body.id ?? team.body.team?.id) as string;
    expect((await retried(a, 'POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } })).status).toBe(201);
    const project = await retried(a, 'POST', '/project', { token: owner.token, body: { name: `Shared ${counter}`, tools: [], access, teamId } });
    expect(project.status).toBe(201);
    const created = await retried(a, 'POST', '/documents', { token: owner.token, body: { projectId: project.body.id, title: 'Shared', content: doc(paragraph('p1', 'One')) } });
    expect(created.status).toBe(201);
    return { owner, member, teamId, projectId: project.body.id as string, documentId: created.body.id as string };
  }

  const storedTexts = async (documentId: string, token: string) => {
    const response = await retried(a, 'GET', `/documents/${documentId}/content`, { token });
    return JSON.stringify(response.body.content ?? response.body);
  };

  it('removing a member from the team closes their collaboration socket on the other process (4403) and refuses their later edits', async () => {
    const { owner, member, teamId, documentId } = await teamDocument('team');
    const client = await collab(b, documentId, member.token);
    client.append('before removal');
    await eventually(() => storedTexts(documentId, owner.token), (text) => text.includes('before removal'), 'the edit before the removal to be stored');

    expect((await retried(a, 'DELETE', `/teams/${teamId}/members/${member.userId}`, { token: owner.token })).status).toBe(204);
    expect(await client.closed).toMatchObject({ code: 4403 });
    client.append('after removal');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await storedTexts(documentId, owner.token)).not.toContain('after removal');
    // And a new socket is refused at the upgrade.
    const again = await WsProbe.open(`${b.wsUrl}/v3/collab/${documentId}?token=${member.token}`).then(
      () => 'opened',
      (error: Error) => error.message,
    );
    expect(again).not.toBe('opened');
  });

  it('turns the socket read-only when the removed member may still read (a public project)', async () => {
    const { owner, member, teamId, documentId } = await teamDocument('public');
    const client = await collab(b, documentId, member.token);
    client.append('while a member');
    await eventually(() => storedTexts(documentId, owner.token), (text) => text.includes('while a member'), 'the member\'s edit to be stored');
    expect((await retried(a, 'DELETE', `/teams/${teamId}/members/${member.userId}`, { token: owner.token })).status).toBe(204);
    // The downgrade is in place once an edit is answered with y-websocket's permission-denied
    // message (on whichever socket the provider holds: it may have reconnected meanwhile).
    const deniedNext = () =>
      new Promise<string>((resolve) => {
        const ws = (client.provider as unknown as { ws: WebSocket | null }).ws;
        if (!ws) return resolve('no socket');
        const onMessage = (event: { data: unknown }) => {
          if (new Uint8Array(event.data as ArrayBuffer)[0] === 2) resolve('permission denied');
        };
        ws.addEventListener('message', onMessage);
        setTimeout(() => {
          ws.removeEventListener('message', onMessage);
          resolve('no answer');
        }, 200);
      });
    await eventually(
      async () => {
        const answer = deniedNext();
        // Probes sent before the signal reached this socket's process may still be stored.
        client.append('probe');
        return answer;
      },
      (answer) => answer === 'permission denied',
      'a permission-denied answer',
    );
    // Once an edit was refused, every later one is refused too.
    const refused = deniedNext();
    client.append('after downgrade');
    await refused;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await storedTexts(documentId, owner.token)).not.toContain('after downgrade');
    // Still connected: reads keep flowing.
    const ownerClient = await collab(a, documentId, owner.token);
    ownerClient.append('from the owner');
    await eventually(async () => client.fragment.toJSON(), (json) => json.includes('from the owner'), 'the read-only client to keep receiving');
  });

  it('disabling a user closes their collaboration (4401) and realtime (4403) sockets on the other process', async () => {
    const { member, documentId } = await teamDocument('team');
    const client = await collab(b, documentId, member.token);
    const wss = await WsProbe.open(`${b.wsUrl}/v3/wss?token=${member.token}`);
    await wss.request('auth', { token: member.token });
    const admin = await register(a);
    await a.kernel.get(UserService).update(a.kernel.fork(), admin.userId, { isAdministrator: true });
    const adminToken = (await retried(a, 'POST', '/auth/login', { body: { email: admin.email, password: 'correct horse battery' } })).body.token as string;
    expect((await retried(a, 'PUT', `/admin/user/${member.userId}`, { token: adminToken, body: { status: 'disabled' } })).status).toBe(200);
    expect(await client.closed).toMatchObject({ code: 4401 });
    expect(await wss.closed).toEqual({ code: 4403, reason: 'access_revoked' });
  });

  it('revoking an API key closes the collaboration socket that uses it (4401) on the other process', async () => {
    const { member, documentId } = await teamDocument('team');
    const issued = await retried(a, 'POST', '/auth/api-keys', { token: member.token, body: { name: 'editor' } });
    expect(issued.status).toBe(201);
    const client = await collab(b, documentId, issued.body.token);
    const other = await collab(b, documentId, member.token);
    expect((await retried(a, 'DELETE', `/auth/api-keys/${issued.body.credential.id}`, { token: member.token })).status).toBe(200);
    expect(await client.closed).toMatchObject({ code: 4401 });
    // The user's other socket (a JWT) is not concerned.
    other.append('still here');
    await eventually(async () => other.provider.wsconnected, (connected) => connected === true, 'the JWT socket to stay');
  });

  it('deleting a document closes its sockets on the other process (4404)', async () => {
    const { owner, member, documentId } = await teamDocument('team');
    const onB = await collab(b, documentId, member.token);
    expect((await retried(a, 'DELETE', `/documents/${documentId}`, { token: owner.token })).status).toBeLessThan(300);
    expect(await onB.closed).toMatchObject({ code: 4404 });
  });

  it('changing a password closes the sockets opened with earlier tokens on the other process', async () => {
    const { member, documentId } = await teamDocument('team');
    const client = await collab(b, documentId, member.token);
    const wss = await WsProbe.open(`${b.wsUrl}/v3/wss?token=${member.token}`);
    await wss.request('auth', { token: member.token });
    // Issued in an earlier second than the change (tokens carry whole seconds).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const changed = await retried(a, 'POST', '/auth/password', { token: member.token, body: { currentPassword: 'correct horse battery', newPassword: 'a new horse battery staple' } });
    expect(changed.status).toBeLessThan(300);
    expect(await client.closed).toMatchObject({ code: 4401 });
    expect(await wss.closed).toEqual({ code: 4403, reason: 'access_revoked' });
    expect((await retried(a, 'GET', '/auth/me', { token: member.token })).status).toBe(401);
  });

  it('closes a collaboration socket whose credential expired at its next frame (4401), without storing that frame', async () => {
    const { owner, member, documentId } = await teamDocument('team');
    const { token } = await a.kernel.get(JwtService).sign(member.userId, { ttlSeconds: 2 });
    const client = await collab(b, documentId, token);
    client.append('while valid');
    await eventually(() => storedTexts(documentId, owner.token), (text) => text.includes('while valid'), 'the edit before expiry to be stored');
    await new Promise((resolve) => setTimeout(resolve, 2100));
    client.append('after expiry');
    expect(await client.closed).toMatchObject({ code: 4401, reason: 'credential expired' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await storedTexts(documentId, owner.token)).not.toContain('after expiry');
  });
});
