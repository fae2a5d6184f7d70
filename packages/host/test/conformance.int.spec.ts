import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

// Spec conformance found by independent clients (issue 10, item 8). Every response here also
// passes the contract check of the shared client (test/support/contract.ts).
describe.each(testDatabases())('spec conformance on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let doc0: { id: string; content_hash: string };

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      owner = await actor(t);
      const project = await createProject(t, owner.token);
      doc0 = await createDocument(t, owner.token, project.id, { content: doc(paragraph('p1', 'Start')) });
    });
    afterAll(() => t?.close());

    it('lands every parallel smart-edit sent without base_version (no 409)', async () => {
      const edits = Array.from({ length: 5 }, (_, i) =>
        t.request('POST', `/documents/${doc0.id}/smart-edit`, {
          token: owner.token,
          body: { mode: 'commands', commands: [{ op: 'insert', block: paragraph(`n${i}`, `Line ${i}`) }] },
        }),
      );
      const answers = await Promise.all(edits);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      const content = await t.request('GET', `/documents/${doc0.id}/content`, { token: owner.token });
      const ids = (content.body.content.content as Array<{ attrs: { id: string } }>).map((block) => block.attrs.id);
      for (let i = 0; i < 5; i++) expect(ids).toContain(`n${i}`);
    });

    it('still answers 409 to a smart-edit whose caller base_version is stale', async () => {
      const stale = await t.request('POST', `/documents/${doc0.id}/smart-edit`, {
        token: owner.token,
        body: { mode: 'content', base_version: doc0.content_hash, content: doc(paragraph('p1', 'Mine')) },
      });
      expect(stale.status).toBe(409);
      expect(stale.body.error).toBe('version_conflict');
    });

    it('lists the caller teams in GET /auth/me', async () => {
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Conformance' } });
      const me = await t.request('GET', '/auth/me', { token: owner.token });
      expect(me.status).toBe(200);
      expect(me.body.teams.map((x: { id: string }) => x.id)).toContain(team.body.id);
      expect(me.body.teams.find((x: { personal: boolean }) => x.personal)).toBeTruthy();
    });

    it('answers lists as { items, total, page, size } on /teams, members and API keys, with paging', async () => {
      const user = await t.register();
      for (const name of ['A', 'B']) await t.request('POST', '/teams', { token: user.token, body: { name } });
      const first = await t.request('GET', '/teams?size=2', { token: user.token });
      expect(first.body).toMatchObject({ total: 3, page: 1, size: 2 });
      expect(first.body.items).toHaveLength(2);
      expect(first.body.items[0].personal).toBe(true);
      const second = await t.request('GET', '/teams?size=2&page=2', { token: user.token });
      expect(second.body).toMatchObject({ total: 3, page: 2, size: 2 });
      expect(second.body.items).toHaveLength(1);
      const keys = await t.request('GET', '/auth/api-keys', { token: owner.token });
      expect(keys.body).toMatchObject({ total: 1, page: 1, size: 20 });
      const members = await t.request('GET', `/teams/${first.body.items[1].id}/members`, { token: user.token });
      expect(members.body).toMatchObject({ total: 1, page: 1, size: 20 });
    });

    it('documents the 200 of POST /documents in edit mode', async () => {
      const edited = await t.request('POST', '/documents', { token: owner.token, body: { documentId: doc0.id, title: 'Renamed' } });
      expect(edited.status).toBe(200);
      const openapi = (await t.request('GET', '/openapi.json')).body;
      expect(Object.keys(openapi.paths['/documents'].post.responses)).toEqual(expect.arrayContaining(['200', '201']));
    });

    it('documents the 302 of GET /oauth/authorize as a redirect without a body', async () => {
      const openapi = (await t.request('GET', '/openapi.json')).body;
      const redirect = openapi.paths['/oauth/authorize'].get.responses['302'];
      expect(redirect.content).toBeUndefined();
      expect(redirect.headers.Location).toBeDefined();
    });

    it('accepts keep_comments=1 in the published schema and at the route', async () => {
      const openapi = (await t.request('GET', '/openapi.json')).body;
      const parameter = openapi.paths['/documents/{documentId}/content'].get.parameters.find((p: { name: string }) => p.name === 'keep_comments');
      expect(parameter.schema.enum).toContain('1');
      const read = await t.request('GET', `/documents/${doc0.id}/content?format=markdown-ir&keep_comments=1`, { token: owner.token });
      expect(read.status).toBe(200);
    });

    it('answers invalid_client after Authorization: Basic with 401 and WWW-Authenticate', async () => {
      const basic = Buffer.from('no-such-client:secret').toString('base64');
      const r = await t.request('POST', '/oauth/token', {
        raw: 'grant_type=authorization_code&client_id=no-such-client&code=abc&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=' + 'a'.repeat(43),
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      });
      expect(r.status).toBe(401);
      expect(r.body.error).toBe('invalid_client');
      expect(r.headers.get('www-authenticate')).toMatch(/^Basic /);
      // Without the header it stays a 400 (public clients do not authenticate).
      const plain = await t.request('POST', '/oauth/token', {
        raw: 'grant_type=authorization_code&client_id=no-such-client&code=abc&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=' + 'a'.repeat(43),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(plain.status).toBe(400);
      expect(plain.body.error).toBe('invalid_client');
    });

    it('answers POST /oauth/revoke without a token with 200', async () => {
      const r = await t.request('POST', '/oauth/revoke', { raw: 'token_type_hint=access_token', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({});
      const empty = await t.request('POST', '/oauth/revoke', { raw: '', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(empty.status).toBe(200);
    });
  });
});
