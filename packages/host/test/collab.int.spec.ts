import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { actor, createDocument, createProject, doc, eventually, paragraph, type Actor } from './documents.fixtures.js';

// Collaborative editing with the stock y-websocket client (WebsocketProvider, unchanged) against
// /v3/collab/{documentId}, on both transports and both databases: sync between clients, the
// mirror to the stored JSON, smart-edit through the channel, 423 on REST edits, awareness,
// read-only connections, yjs-state and the REST join/leave/edit endpoints.

interface Client {
  ydoc: Y.Doc;
  provider: WebsocketProvider;
  fragment: Y.XmlFragment;
  /** Raw messages received, for protocol-level checks. */
  received: Uint8Array[];
  close(): void;
}

/** What a client sees in the shared fragment: [type, id, text] per top-level block. */
const blocks = (client: Client) =>
  client.fragment.toArray().map((node) => {
    const element = node as Y.XmlElement;
    const text = element
      .toArray()
      .map((child) => (child instanceof Y.XmlText ? child.toDelta().map((op: { insert: unknown }) => (typeof op.insert === 'string' ? op.insert : '')).join('') : ''))
      .join('');
    return [element.nodeName, element.getAttribute('id'), text];
  });

/** Resolves once `predicate` holds for the client's document (checked on every update). */
function until(client: Client, predicate: () => boolean, what: string): Promise<void> {
  if (predicate()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}: ${JSON.stringify(blocks(client))}`)), 20_000);
    const check = () => {
      if (!predicate()) return;
      clearTimeout(timer);
      client.ydoc.off('update', check);
      resolve();
    };
    client.ydoc.on('update', check);
  });
}

describe.each(testDatabases())('collaborative editing on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let reader: Actor;
    let stranger: Actor;
    let projectId: string;
    let publicProjectId: string;
    const open: Client[] = [];

    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { collab: { mirrorDebounceMs: 20, mirrorMaxWaitMs: 200 } } });
      [owner, reader, stranger] = await Promise.all([actor(t), actor(t), actor(t)]);
      projectId = (await createProject(t, owner.token)).id;
      publicProjectId = (await createProject(t, owner.token, { access: 'public' })).id;
    });
    afterEach(() => {
      for (const client of open.splice(0)) client.close();
    });
    afterAll(() => t?.close());

    async function connect(documentId: string, token: string, options: { waitForSync?: boolean } = {}): Promise<Client> {
      const ydoc = new Y.Doc();
      const provider = new WebsocketProvider(`${t.wsUrl}/v3/collab`, documentId, ydoc, {
        params: { token },
        WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
        disableBc: true,
        maxBackoffTime: 500,
      });
      const received: Uint8Array[] = [];
      provider.on('status', ({ status }) => {
        if (status === 'connected') (provider.ws as unknown as WebSocket).addEventListener('message', (event) => received.push(new Uint8Array(event.data as ArrayBuffer)));
      });
      const client: Client = {
        ydoc,
        provider,
        fragment: ydoc.getXmlFragment('default'),
        received,
        close: () => {
          provider.destroy();
          ydoc.destroy();
        },
      };
      open.push(client);
      if (options.waitForSync ?? true) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('the provider never synced')), 20_000);
          provider.once('sync', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return client;
    }

    const content = (id: string, token = owner.token) => t.request('GET', `/documents/${id}/content`, { token });

    /** Appends a paragraph the way an editor binding does: an element with attributes and formatted text. */
    function addParagraph(client: Client, id: string, text: string, marks?: Record<string, unknown>) {
      client.ydoc.transact(() => {
        const element = new Y.XmlElement('paragraph');
        client.fragment.push([element]);
        element.setAttribute('id', id);
        element.setAttribute('name', `named ${id}`);
        const body = new Y.XmlText();
        element.insert(0, [body]);
        body.insert(0, text, marks);
      });
    }

    it('a stock y-websocket client edits a document that a second client and a later REST read both see', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Hello', 'greeting')) });
      const a = await connect(d.id, owner.token);
      const b = await connect(d.id, owner.apiKey);
      expect(blocks(a)).toEqual([['paragraph', 'p1', 'Hello']]);
      expect((a.fragment.get(0) as Y.XmlElement).getAttribute('name')).toBe('greeting');

      addParagraph(a, 'p2', 'From A', { bold: {} });
      await until(b, () => blocks(b).length === 2 && blocks(b)[1]![2] === 'From A', 'client B to see the edit of client A');

      const read = await eventually(() => content(d.id), (r) => r.body.content?.content?.length === 2, 'the REST read to see the edit');
      expect(read.body.content).toEqual(
        doc(paragraph('p1', 'Hello', 'greeting'), { type: 'paragraph', attrs: { id: 'p2', name: 'named p2' }, content: [{ type: 'text', text: 'From A', marks: [{ type: 'bold' }] }] }),
      );
      expect(read.body.content_source).toBe('collab');
      const versions = await t.request('GET', `/documents/${d.id}/versions?source=collab`, { token: owner.token });
      expect(versions.body.items[0]).toMatchObject({ version: read.body.content_hash, author: { id: owner.userId } });

      // B edits the text A wrote; A sees it.
      b.ydoc.transact(() => ((b.fragment.get(1) as Y.XmlElement).get(0) as Y.XmlText).insert(6, ' and B'));
      await until(a, () => blocks(a)[1]![2] === 'From A and B', 'client A to see the edit of client B');
    });

    it('answers 423 to REST edits while connected, and a smart-edit reaches connected clients live', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Start')) });
      const a = await connect(d.id, owner.token);
      const locked = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'list' }] } });
      expect(locked.status).toBe(423);
      expect(locked.body).toEqual({ error: 'document_locked', message: expect.any(String), active_connections: 1, scope: 'local' });

      const smart = await t.request('POST', `/documents/${d.id}/smart-edit`, {
        token: owner.agentToken,
        body: { mode: 'commands', commands: [{ op: 'insert', block: paragraph('p2', 'From the agent'), after: 'p1' }, { op: 'write', blockId: 'p1', content: 'Changed' }] },
      });
      expect(smart.status).toBe(200);
      expect(smart.body).toMatchObject({ success: true, mode: 'collab' });
      await until(a, () => JSON.stringify(blocks(a)) === JSON.stringify([['paragraph', 'p1', 'Changed'], ['paragraph', 'p2', 'From the agent']]), 'the smart-edit to reach the client');
      const read = await content(d.id);
      expect(read.body.content).toEqual(doc(paragraph('p1', 'Changed'), paragraph('p2', 'From the agent')));
      expect(read.body.content_hash).toBe(smart.body.version);
      const versions = await t.request('GET', `/documents/${d.id}/versions?source=smart_edit`, { token: owner.token });
      expect(versions.body.items[0]).toMatchObject({ version: smart.body.version, author_kind: 'agent_token' });

      const ir = await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.token, body: { mode: 'content', content_format: 'markdown-ir', content: ':::paragraph {"id":"p1"}\nRewritten\n:::\n' } });
      expect(ir.body.mode).toBe('collab');
      await until(a, () => JSON.stringify(blocks(a)) === JSON.stringify([['paragraph', 'p1', 'Rewritten']]), 'the content smart-edit to reach the client');
    });

    it('smart-edit uses REST when nobody collaborates, and keeps the REST rules', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Start'), paragraph('c', '// note')) });
      const rest = await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.token, body: { mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'Via REST' }] } });
      expect(rest.body).toMatchObject({ success: true, mode: 'rest' });
      expect((await content(d.id)).body.content_hash).toBe(rest.body.version);
      const stale = await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.token, body: { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'list' }] } });
      expect([stale.status, stale.body.error]).toEqual([409, 'version_conflict']);
      const comments = await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.agentToken, body: { mode: 'content', content: doc(paragraph('p1', 'x')) } });
      expect([comments.status, comments.body.error]).toEqual([409, 'comment_preservation_required']);
      const apiKey = await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.apiKey, body: { mode: 'commands', commands: [{ op: 'list' }] } });
      expect([apiKey.status, apiKey.body.error]).toEqual([403, 'credential_not_allowed']);
      expect((await t.request('POST', `/documents/${d.id}/smart-edit`, { token: owner.token, body: { mode: 'commands', commands: [] } })).status).toBe(400);
      expect((await t.request('POST', `/documents/${d.id}/smart-edit`, { token: stranger.token, body: { mode: 'commands', commands: [{ op: 'list' }] } })).status).toBe(404);
      const pub = await createDocument(t, owner.token, publicProjectId);
      expect((await t.request('POST', `/documents/${pub.id}/smart-edit`, { token: reader.token, body: { mode: 'commands', commands: [{ op: 'list' }] } })).status).toBe(403);
    });

    it('returns to rest mode when the last client leaves', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Start')) });
      const a = await connect(d.id, owner.token);
      addParagraph(a, 'p2', 'last words');
      expect((await content(d.id)).body.content_source).toBe('collab');
      a.close();
      const after = await eventually(() => content(d.id), (r) => r.body.content_source === 'rest', 'the document to leave collab mode');
      expect(after.body.content.content).toHaveLength(2);
      const edit = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: after.body.content_hash, mode: 'commands', commands: [{ op: 'delete', blockId: 'p2' }] } });
      expect(edit.status).toBe(200);
      // A client connecting afterwards starts from the REST edit, not from the old Yjs state.
      const b = await connect(d.id, owner.token);
      expect(blocks(b)).toEqual([['paragraph', 'p1', 'Start']]);
    });

    it('lists collaborators from their awareness (this process only)', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Hello')) });
      const empty = await t.request('GET', `/documents/${d.id}/awareness`, { token: owner.agentToken });
      expect(empty.body).toEqual({ collaborators: [], active_connections: 0, scope: 'local' });
      const a = await connect(d.id, owner.token);
      const b = await connect(d.id, owner.token);
      a.provider.awareness.setLocalState({ user: { name: 'Ada', color: '#ff0000' }, cursor: { anchor: 1, head: 3 }, selection: { blockId: 'p1', blockType: 'paragraph', text: 'ell' } });
      b.provider.awareness.setLocalState({ user: { name: 'Bob' } });
      const seen = await eventually(
        () => t.request('GET', `/documents/${d.id}/awareness`, { token: owner.token }),
        (r) => r.body.collaborators?.length === 2,
        'both collaborators',
      );
      expect(seen.body.active_connections).toBe(2);
      expect(seen.body.scope).toBe('local');
      const ada = seen.body.collaborators.find((c: any) => c.clientId === a.ydoc.clientID);
      expect(ada).toEqual({ clientId: a.ydoc.clientID, userId: owner.userId, name: 'Ada', color: '#ff0000', cursor: { anchor: 1, head: 3 }, selection: { blockId: 'p1', blockType: 'paragraph', text: 'ell' } });
      const bob = seen.body.collaborators.find((c: any) => c.clientId === b.ydoc.clientID);
      expect(bob).toMatchObject({ name: 'Bob', color: null, cursor: null, selection: null });
      // Awareness reaches the other client too.
      await until(b, () => b.provider.awareness.getStates().get(a.ydoc.clientID)?.user?.name === 'Ada' || false, 'awareness of A at B');
      a.close();
      await eventually(() => t.request('GET', `/documents/${d.id}/awareness`, { token: owner.token }), (r) => r.body.collaborators?.length === 1, 'A to leave');
      expect((await t.request('GET', `/documents/${d.id}/awareness`, { token: stranger.token })).status).toBe(404);
    });

    it('refuses the updates of read-only connections', async () => {
      const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('p1', 'Public')) });
      const readerClient = await connect(d.id, reader.token);
      const writer = await connect(d.id, owner.token);
      expect(blocks(readerClient)).toEqual([['paragraph', 'p1', 'Public']]);
      addParagraph(readerClient, 'evil', 'should not land');
      // The server answers the refused update with a y-websocket auth message (permission denied).
      await eventually(async () => readerClient.received.some((m) => m[0] === 2), Boolean, 'a permission-denied message');
      addParagraph(writer, 'p2', 'Owner text');
      await until(readerClient, () => blocks(readerClient).some((b) => b[1] === 'p2'), 'the owner edit to reach the reader');
      const read = await content(d.id);
      expect(read.body.content).toEqual(doc(paragraph('p1', 'Public'), { type: 'paragraph', attrs: { id: 'p2', name: 'named p2' }, content: [{ type: 'text', text: 'Owner text' }] }));
      expect(blocks(writer).some((b) => b[1] === 'evil')).toBe(false);
    });

    it('authenticates and checks access before the upgrade', async () => {
      const d = await createDocument(t, owner.token, projectId);
      const status = (path: string) =>
        new Promise<number>((resolve) => {
          const ws = new WebSocket(`${t.wsUrl}${path}`);
          ws.on('unexpected-response', (_req, res) => {
            resolve(res.statusCode ?? 0);
            ws.terminate();
          });
          ws.on('open', () => {
            resolve(101);
            ws.close();
          });
          ws.on('error', () => undefined);
        });
      expect(await status(`/v3/collab/${d.id}`)).toBe(401);
      expect(await status(`/v3/collab/${d.id}?token=nonsense`)).toBe(401);
      expect(await status(`/v3/collab/${d.id}?token=${stranger.token}`)).toBe(404);
      expect(await status(`/v3/collab/not-a-uuid?token=${owner.token}`)).toBe(404);
      expect(await status(`/v3/collab/${d.id}?token=${owner.agentToken}`)).toBe(101);
    });

    it('disconnects collaborators of a deleted document with a close code y-websocket does not retry', async () => {
      const d = await createDocument(t, owner.token, projectId);
      const a = await connect(d.id, owner.token);
      const closed = new Promise<number>((resolve) => a.provider.on('closed', (event) => resolve(event.code)));
      expect((await t.request('DELETE', `/documents/${d.id}`, { token: owner.token })).status).toBe(200);
      expect(await closed).toBe(4404);
    });

    it('stores and serves the Yjs state (yjs-state), and mirrors a PUT state to the content', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Before')) });
      const none = await t.request('GET', `/documents/${d.id}/yjs-state`, { token: owner.token });
      expect(none.body).toEqual({ state: null });
      // A client builds its own state and stores it.
      const local = new Y.Doc();
      local.transact(() => {
        const element = new Y.XmlElement('heading');
        local.getXmlFragment('default').push([element]);
        element.setAttribute('id', 'h1');
        element.setAttribute('level', 2 as unknown as string); // attribute values may be any JSON (y-prosemirror writes numbers too)
        const text = new Y.XmlText();
        element.insert(0, [text]);
        text.insert(0, 'From a state');
      });
      const put = await t.request('PUT', `/documents/${d.id}/yjs-state`, { token: owner.apiKey, body: { state: Array.from(Y.encodeStateAsUpdate(local)) } });
      expect(put.status).toBe(200);
      expect(put.body).toEqual({ success: true });
      const read = await content(d.id);
      expect(read.body.content).toEqual(doc({ type: 'heading', attrs: { id: 'h1', level: 2 }, content: [{ type: 'text', text: 'From a state' }] }));
      const stored = await t.request('GET', `/documents/${d.id}/yjs-state`, { token: owner.token });
      const replica = new Y.Doc();
      Y.applyUpdate(replica, Uint8Array.from(stored.body.state));
      expect(replica.getXmlFragment('default').toString()).toBe(local.getXmlFragment('default').toString());
      // A client that connects now continues that state.
      const a = await connect(d.id, owner.token);
      expect(blocks(a)).toEqual([['heading', 'h1', 'From a state']]);
      // While connected, a PUT state merges into the live document.
      const extra = new Y.Doc();
      Y.applyUpdate(extra, Uint8Array.from(stored.body.state));
      extra.transact(() => {
        const element = new Y.XmlElement('paragraph');
        extra.getXmlFragment('default').push([element]);
        element.setAttribute('id', 'p9');
      });
      expect((await t.request('PUT', `/documents/${d.id}/yjs-state`, { token: owner.token, body: { state: Array.from(Y.encodeStateAsUpdate(extra)) } })).status).toBe(200);
      await until(a, () => blocks(a).length === 2, 'the merged state at the client');
      // A REST edit made while nobody collaborates makes the stored state stale: it is no longer served.
      a.close();
      const rest = await eventually(() => content(d.id), (r) => r.body.content_source === 'rest', 'rest mode');
      await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: rest.body.content_hash, mode: 'content', content: doc(paragraph('x', 'REST')) } });
      expect((await t.request('GET', `/documents/${d.id}/yjs-state`, { token: owner.token })).body.state).toBeNull();
    });

    it('guards yjs-state: JWT or API key only, write permission, a byte array holding a Yjs update', async () => {
      const d = await createDocument(t, owner.token, publicProjectId);
      const path = `/documents/${d.id}/yjs-state`;
      expect((await t.request('GET', path, { token: owner.agentToken })).status).toBe(403);
      expect((await t.request('PUT', path, { token: owner.agentToken, body: { state: [0, 0] } })).status).toBe(403);
      expect((await t.request('PUT', path, { token: owner.token, body: {} })).status).toBe(400);
      expect((await t.request('PUT', path, { token: owner.token, body: { state: 'abc' } })).status).toBe(400);
      expect((await t.request('PUT', path, { token: owner.token, body: { state: [1, 2, 300] } })).status).toBe(400);
      const garbage = await t.request('PUT', path, { token: owner.token, body: { state: [255, 255, 255, 255, 1, 2, 3] } });
      expect([garbage.status, garbage.body.error]).toEqual([400, 'invalid_yjs_state']);
      expect((await t.request('PUT', path, { token: reader.token, body: { state: [0, 0] } })).status).toBe(403);
      expect((await t.request('GET', path, { token: reader.token })).status).toBe(200);
      const hidden = await createDocument(t, owner.token, projectId);
      expect((await t.request('GET', `/documents/${hidden.id}/yjs-state`, { token: stranger.token })).status).toBe(404);
      expect((await t.request('PUT', `/documents/${hidden.id}/yjs-state`, { token: stranger.token, body: { state: [0, 0] } })).status).toBe(404);
      expect((await t.request('GET', '/documents/0190c1d2-0000-7000-8000-000000000000/yjs-state', { token: owner.token })).status).toBe(404);
    });

    it('lets REST callers join, edit through the channel and leave', async () => {
      const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('p1', 'Start')) });
      const join = await t.request('POST', `/documents/${d.id}/collab/join`, { token: owner.agentToken });
      expect(join.status).toBe(200);
      expect(join.body).toMatchObject({ success: true, content_source: 'collab', active_connections: 1, websocket_path: `/v3/collab/${d.id}`, protocol: 'y-websocket', fragment: 'default' });
      const fromJoin = new Y.Doc();
      Y.applyUpdate(fromJoin, Uint8Array.from(join.body.state));
      expect(fromJoin.getXmlFragment('default').length).toBe(1);
      expect((await content(d.id)).body.content_source).toBe('collab');
      const locked = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'list' }] } });
      expect(locked.status).toBe(423);
      const a = await connect(d.id, owner.token);
      const edit = await t.request('POST', `/documents/${d.id}/collab/edit`, { token: owner.agentToken, body: { mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'Joined edit' }] } });
      expect(edit.body).toMatchObject({ success: true, mode: 'collab' });
      await until(a, () => blocks(a)[0]![2] === 'Joined edit', 'the collab edit at the client');
      const bad = await t.request('POST', `/documents/${d.id}/collab/edit`, { token: owner.token, body: { mode: 'commands', commands: [{ op: 'delete', blockId: 'nope' }] } });
      expect([bad.status, bad.body.error]).toEqual([400, 'command_failed']);
      a.close();
      const leave = await t.request('POST', `/documents/${d.id}/collab/leave`, { token: owner.agentToken, body: { participant_id: join.body.participant_id } });
      expect(leave.body).toMatchObject({ success: true, left: 1 });
      const rest = await eventually(() => content(d.id), (r) => r.body.content_source === 'rest', 'rest mode after leave');
      expect(rest.body.content).toEqual(doc(paragraph('p1', 'Joined edit')));
      expect((await t.request('POST', `/documents/${d.id}/collab/join`, { token: stranger.token })).status).toBe(404);
      const pub = await createDocument(t, owner.token, publicProjectId);
      expect((await t.request('POST', `/documents/${pub.id}/collab/edit`, { token: reader.token, body: { mode: 'commands', commands: [{ op: 'list' }] } })).status).toBe(403);
    });
  });
});
