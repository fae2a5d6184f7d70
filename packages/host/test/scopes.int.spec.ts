import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createDocument, createProject, doc, paragraph } from './documents.fixtures.js';

// A scope limits a credential everywhere it can reach: HTTP routes, the JSON-RPC channels and the
// collaborative-editing channel. Credentials without scopes keep their user's full authority.
describe.each(testDatabases())('scoped credentials on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: { token: string; userId: string };
    let documentId: string;
    const key = async (scopes?: string[], kind: 'api-keys' | 'agent-tokens' = 'api-keys') => {
      const r = await t.request('POST', `/auth/${kind}`, { token: owner.token, body: { name: 'scoped', ...(scopes ? { scopes } : {}) } });
      expect(r.status).toBe(201);
      return r.body.token as string;
    };
    /** The HTTP status of a WebSocket upgrade (101 when accepted). */
    const upgrade = (path: string, token: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${t.wsUrl}${path}?token=${encodeURIComponent(token)}`);
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.once('error', (error) => reject(error));
      });

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      owner = await t.register();
      const project = await createProject(t, owner.token);
      documentId = (await createDocument(t, owner.token, project.id, { content: doc(paragraph('b1', 'hello')) })).id;
    });
    afterAll(() => t?.close());

    it('lets documents:read read but not write, and documents:write do both', async () => {
      const reader = await key(['documents:read'], 'agent-tokens');
      const read = await t.request('GET', `/documents/${documentId}/content`, { token: reader });
      expect(read.status).toBe(200);
      const edit = await t.request('POST', `/documents/${documentId}/edit`, {
        token: reader,
        body: { base_version: read.body.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'b1', content: [{ type: 'text', text: 'changed' }] }] },
      });
      expect(edit.status).toBe(403);
      expect(edit.body.error).toBe('insufficient_scope');
      expect(edit.headers.get('www-authenticate')).toContain('insufficient_scope');

      const writer = await key(['documents:write'], 'agent-tokens');
      const ok = await t.request('POST', `/documents/${documentId}/edit`, {
        token: writer,
        body: { base_version: read.body.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'b1', content: [{ type: 'text', text: 'changed' }] }] },
      });
      expect(ok.status).toBe(200);
    });

    it('refuses a credential scoped to something else, and accepts an unscoped or full-access one', async () => {
      const profileOnly = await key(['profile:read']);
      expect((await t.request('GET', `/documents/${documentId}/content`, { token: profileOnly })).status).toBe(403);
      expect((await t.request('GET', '/auth/me', { token: profileOnly })).status).toBe(200);
      expect((await t.request('GET', `/documents/${documentId}/content`, { token: await key() })).status).toBe(200);
      expect((await t.request('GET', `/documents/${documentId}/content`, { token: await key(['mobile:full']) })).status).toBe(200);
    });

    it('applies scopes to the collaborative-editing and JSON-RPC channels', async () => {
      expect(await upgrade(`/v3/collab/${documentId}`, await key(['profile:read']))).toBe(403);
      expect(await upgrade(`/v3/collab/${documentId}`, await key(['documents:read']))).toBe(101);
      expect(await upgrade('/v3/wss', await key(['documents:write']))).toBe(403);
      expect(await upgrade('/v3/wss', await key(['mobile:full']))).toBe(101);
      expect(await upgrade('/v3/wss', await key())).toBe(101);
    });
  });
});
