import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { actor, createDocument, createProject, doc, eventually, paragraph, type Actor } from './documents.fixtures.js';

// Collaboration abuse (issue 10, item 5): a read-only viewer of a public document cannot lock the
// owner out of REST edits by holding a socket or a REST participation, may only send
// awareness-sized frames, writers' frame size is configurable, and an empty Yjs update is refused.

const writerLimit = 256 * 1024;
const readerLimit = 16 * 1024;

interface Raw {
  ws: WebSocket;
  closed: Promise<{ code: number; reason: string }>;
}

/** A raw WebSocket client of /v3/collab, open once the server sent its first message (the document is loaded). */
function open(t: TestHost, documentId: string, token: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${t.wsUrl}/v3/collab/${documentId}?token=${encodeURIComponent(token)}`);
    const closed = new Promise<{ code: number; reason: string }>((done) => ws.on('close', (code, reason) => done({ code, reason: reason.toString() })));
    ws.on('error', () => undefined);
    ws.once('message', () => resolve({ ws, closed }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

/** A y-websocket awareness message (type 1) of about `size` bytes: valid framing, junk state. */
function bigFrame(size: number): Buffer {
  const out = Buffer.alloc(size, 0x61);
  out[0] = 1;
  return out;
}

describe.each(testDatabases())('collaboration abuse on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let viewer: Actor;
    let publicProjectId: string;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { collab: { mirrorDebounceMs: 20, mirrorMaxWaitMs: 200, maxFrameBytes: writerLimit, maxReadOnlyFrameBytes: readerLimit } } });
      [owner, viewer] = await Promise.all([actor(t), actor(t)]);
      publicProjectId = (await createProject(t, owner.token, { access: 'public' })).id;
    });
    afterAll(() => t?.close());

    const content = async (id: string) => (await t.request('GET', `/documents/${id}/content`, { token: owner.token })).body;

    it('lets the owner edit over REST while only a read-only viewer holds a socket', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Hello')) });
      const socket = await open(t, d.id, viewer.token);
      try {
        await eventually(() => t.request('GET', `/documents/${d.id}/content`, { token: owner.token }), (r) => r.body.content_source === 'collab', 'the session to open');
        const current = await content(d.id);
        const edit = await t.request('POST', `/documents/${d.id}/edit`, {
          token: owner.token,
          body: { base_version: current.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'Edited by the owner' }] },
        });
        expect(edit.status).toBe(200);
        const after = await eventually(() => content(d.id), (c) => JSON.stringify(c.content).includes('Edited by the owner'), 'the edit to land');
        expect(after.content_hash).toBe(edit.body.version);
        // A stale base_version is still a conflict.
        const stale = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: current.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'x' }] } });
        expect(stale.status).toBe(409);
      } finally {
        socket.ws.close();
      }
    });

    it('still answers 423 while a collaborator who may write is connected', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Hello')) });
      const socket = await open(t, d.id, owner.token);
      try {
        await eventually(() => t.request('GET', `/documents/${d.id}/content`, { token: owner.token }), (r) => r.body.content_source === 'collab', 'the session to open');
        const current = await content(d.id);
        const edit = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: current.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'x' }] } });
        expect(edit.status).toBe(423);
      } finally {
        socket.ws.close();
      }
    });

    it('does not count a read-only REST participant as an editor', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Hello')) });
      const joined = await t.request('POST', `/documents/${d.id}/collab/join`, { token: viewer.token });
      expect(joined.status).toBe(200);
      const current = await content(d.id);
      const edit = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: current.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'Still mine' }] } });
      expect(edit.status).toBe(200);
      await t.request('POST', `/documents/${d.id}/collab/leave`, { token: viewer.token, body: { participant_id: joined.body.participant_id } });
    });

    it('closes a read-only socket that sends more than an awareness-sized frame (1009), not a writer one', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Hello')) });
      const reader = await open(t, d.id, viewer.token);
      reader.ws.send(bigFrame(readerLimit + 1024));
      expect((await reader.closed).code).toBe(1009);

      // The same size from a writer is within its (configured) limit: not closed for its size.
      const writer = await open(t, d.id, owner.token);
      writer.ws.send(bigFrame(readerLimit + 1024));
      const outcome = await Promise.race([writer.closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), 300))]);
      expect(outcome?.code).not.toBe(1009);
      writer.ws.close();

      // Past the configured writer limit, a writer is closed too.
      const greedy = await open(t, d.id, owner.token);
      greedy.ws.send(bigFrame(writerLimit + 1024));
      expect((await greedy.closed).code).toBe(1009);
    });

    it('answers 400 to PUT yjs-state with an empty update and keeps the content', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Keep me')) });
      const put = await t.request('PUT', `/documents/${d.id}/yjs-state`, { token: owner.token, body: { state: [0, 0] } });
      expect(put.status).toBe(400);
      expect(put.body.error).toBe('invalid_yjs_state');
      expect(JSON.stringify((await content(d.id)).content)).toContain('Keep me');
    });
  });
});
