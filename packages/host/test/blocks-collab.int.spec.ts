import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { actor, createProject, doc, eventually, paragraph, type Actor } from './documents.fixtures.js';

// A block's page is edited collaboratively like any document (stock y-websocket client on
// /v3/collab/{blockId}): the block API reads, writes, deploys and duplicates what collaborators
// typed, and trashing the block or deleting its project ends their sessions. Both transports and
// both databases.

interface Client {
  ydoc: Y.Doc;
  provider: WebsocketProvider;
  fragment: Y.XmlFragment;
  close(): void;
}

const texts = (client: Client) => client.fragment.toArray().map((node) => (node as Y.XmlElement).toArray().map((c) => (c instanceof Y.XmlText ? c.toString() : '')).join(''));

describe.each(testDatabases())('blocks edited collaboratively on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let projectId: string;
    const open: Client[] = [];
    let counter = 0;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { collab: { mirrorDebounceMs: 20, mirrorMaxWaitMs: 200 } } });
      owner = await actor(t);
      projectId = (await createProject(t, owner.token)).id;
    });
    afterEach(() => {
      for (const client of open.splice(0)) client.close();
    });
    afterAll(() => t?.close());

    async function connect(documentId: string): Promise<Client> {
      const ydoc = new Y.Doc();
      const provider = new WebsocketProvider(`${t.wsUrl}/v3/collab`, documentId, ydoc, {
        params: { token: owner.token },
        WebSocketPolyfill: WebSocket as unknown as typeof globalThis.WebSocket,
        disableBc: true,
        maxBackoffTime: 500,
      });
      const client: Client = { ydoc, provider, fragment: ydoc.getXmlFragment('default'), close: () => (provider.destroy(), ydoc.destroy()) };
      open.push(client);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the provider never synced')), 20_000);
        provider.once('sync', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return client;
    }

    function type(client: Client, id: string, text: string) {
      client.ydoc.transact(() => {
        const element = new Y.XmlElement('paragraph');
        client.fragment.push([element]);
        element.setAttribute('id', id);
        const body = new Y.XmlText();
        element.insert(0, [body]);
        body.insert(0, text);
      });
    }

    const newBlock = async (project = projectId) => {
      const r = await t.request('POST', `/block/${project}`, { token: owner.token, body: { name: `Live ${++counter}`, type: 'workflow', content: doc(paragraph('p1', 'First')) } });
      expect(r.status, r.text).toBe(201);
      return r.body;
    };

    it('reads, deploys and duplicates what a collaborator typed, and writes content through the session', async () => {
      const block = await newBlock();
      const client = await connect(block.id);
      expect(texts(client)).toEqual(['First']);
      type(client, 'p2', 'Typed live');
      // GET /block flushes the live session first, as deploy and duplicate do.
      const read = await eventually(() => t.request('GET', `/block/${block.id}`, { token: owner.token }), (r) => r.body.content?.content?.length === 2, 'the block to show the live edit');
      expect(read.body.content).toEqual(doc(paragraph('p1', 'First'), paragraph('p2', 'Typed live')));
      type(client, 'p3', 'Just before deploy');
      const deployed = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'private' } });
      expect(deployed.status).toBe(201);
      const detail = await t.request('GET', `/project/deployment/${block.id}`, { token: owner.token });
      expect(detail.body.content.content.map((b: any) => b.content[0].text)).toEqual(['First', 'Typed live', 'Just before deploy']);
      const copy = await t.request('POST', `/block/${projectId}/${block.id}/duplicate`, { token: owner.token });
      expect(copy.body.content).toEqual(detail.body.content);
      // A REST write while the session is open goes through it: the collaborator sees it.
      const put = await t.request('PUT', `/block/${block.id}`, { token: owner.token, body: { content: doc(paragraph('r1', 'Replaced over REST')) } });
      expect(put.status, put.text).toBe(200);
      await eventually(async () => texts(client), (x) => x.length === 1 && x[0] === 'Replaced over REST', 'the collaborator to see the REST write');
    });

    it('ends the sessions of a trashed block, and of every page of a deleted project', async () => {
      const block = await newBlock();
      const client = await connect(block.id);
      const closed = new Promise<number>((resolve) => client.provider.on('closed', (event) => resolve(event.code)));
      expect((await t.request('DELETE', `/block/${projectId}/${block.id}`, { token: owner.token })).status).toBe(200);
      expect(await closed).toBe(4404);
      const p = await createProject(t, owner.token);
      const other = await newBlock(p.id);
      const second = await connect(other.id);
      const ended = new Promise<number>((resolve) => second.provider.on('closed', (event) => resolve(event.code)));
      expect((await t.request('DELETE', `/project/${p.id}`, { token: owner.token })).status).toBe(200);
      expect(await ended).toBe(4404);
    });
  });
});
