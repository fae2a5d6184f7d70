import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, type Actor } from './documents.fixtures.js';

// Projects: creation, the file tree (filesFolder) and the access model (owner, team members,
// public readers; read, write, execute), on both transports and both databases.
describe.each(testDatabases())('projects on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let member: Actor;
    let outsider: Actor;
    let teamId: string;

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      [owner, member, outsider] = await Promise.all([actor(t), actor(t), actor(t)]);
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Writers' } });
      teamId = team.body.id;
      const added = await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } });
      expect(added.status).toBe(201);
    });
    afterAll(() => t?.close());

    const get = (id: string, token: string) => t.request('GET', `/project/${id}`, { token });

    it('creates a project with the spec fields and reads it back with an empty file tree', async () => {
      const r = await t.request('POST', '/project', { token: owner.token, body: { name: 'Bot', tools: ['web_search', 'web_search', 'tts'], access: 'private', template: 'blank' } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ name: 'Bot', tools: ['web_search', 'tts'], access: 'private', template: 'blank', description: '', ownerId: owner.userId, permissions: ['read', 'write', 'execute'], filesFolder: [] });
      const read = await get(r.body.id, owner.apiKey);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(r.body);
      expect((await get(r.body.id, owner.agentToken)).status).toBe(200);
    });

    it('answers 409 for a name the team already uses, and 422 for bad values', async () => {
      await createProject(t, owner.token, { name: 'Unique name' });
      const again = await t.request('POST', '/project', { token: owner.token, body: { name: 'Unique name', tools: [], access: 'team' } });
      expect([again.status, again.body.error]).toEqual([409, 'project_name_taken']);
      // Another team may use it.
      expect((await t.request('POST', '/project', { token: owner.token, body: { name: 'Unique name', tools: [], access: 'team', teamId } })).status).toBe(201);
      const racing = await Promise.all([1, 2, 3].map(() => t.request('POST', '/project', { token: member.token, body: { name: 'Race', tools: [], access: 'team' } })));
      expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      for (const body of [{ tools: [], access: 'team' }, { name: 'x', access: 'team' }, { name: 'x', tools: [], access: 'everyone' }, { name: 'x', tools: 'a', access: 'team' }, { name: 'x', tools: [], access: 'team', extra: 1 }]) {
        const r = await t.request('POST', '/project', { token: owner.token, body });
        expect(r.status, JSON.stringify(body)).toBe(422);
      }
      expect((await t.request('POST', '/project', { body: { name: 'x', tools: [], access: 'team' } })).status).toBe(401);
    });

    it('places a project in a team only for its members', async () => {
      const r = await t.request('POST', '/project', { token: outsider.token, body: { name: 'Intruder', tools: [], access: 'team', teamId } });
      expect([r.status, r.body.error]).toEqual([404, 'team_not_found']);
    });

    it('gives team members full access to team projects, and nobody but the owner to private ones', async () => {
      const team = await createProject(t, owner.token, { access: 'team', teamId });
      const priv = await createProject(t, owner.token, { access: 'private', teamId });
      expect((await get(team.id, member.token)).body.permissions).toEqual(['read', 'write', 'execute']);
      expect((await get(priv.id, member.token)).status).toBe(404);
      expect((await get(team.id, outsider.token)).status).toBe(404);
      expect((await get(team.id, outsider.token)).body.error).toBe('project_not_found');
      const d = await createDocument(t, member.token, team.id, { title: 'By a member' });
      expect((await t.request('GET', `/documents/${d.id}/content`, { token: owner.token })).status).toBe(200);
    });

    it('lets every signed-in user read a public project, and only members write it', async () => {
      const pub = await createProject(t, owner.token, { access: 'public' });
      const read = await get(pub.id, outsider.token);
      expect(read.status).toBe(200);
      expect(read.body.permissions).toEqual(['read']);
      const folder = await t.request('POST', `/project/${pub.id}/folders`, { token: outsider.token, body: { label: 'nope' } });
      expect([folder.status, folder.body.error]).toEqual([403, 'project_access_denied']);
    });

    it('builds the file tree from folders and documents, in order', async () => {
      const p = await createProject(t, owner.token);
      const docs = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'Docs' } });
      const nested = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'Nested', parentKey: docs.body.key } });
      expect(nested.body).toEqual({ key: expect.any(String), label: 'Nested', type: 'folder', docType: 'folder', isLeaf: false, children: [] });
      const first = await createDocument(t, owner.token, p.id, { title: 'First', parentKey: docs.body.key });
      const top = await createDocument(t, owner.token, p.id, { title: 'Top' });
      const tree = await get(p.id, owner.token);
      expect(tree.body.filesFolder).toEqual([
        {
          key: docs.body.key,
          label: 'Docs',
          type: 'folder',
          docType: 'folder',
          isLeaf: false,
          children: [
            { key: nested.body.key, label: 'Nested', type: 'folder', docType: 'folder', isLeaf: false, children: [] },
            { key: first.id, label: 'First', type: 'file', docType: 'document', isLeaf: true },
          ],
        },
        { key: top.id, label: 'Top', type: 'file', docType: 'document', isLeaf: true },
      ]);
      const missing = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'x', parentKey: 'nope' } });
      expect([missing.status, missing.body.error]).toEqual([404, 'node_not_found']);
      const underFile = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'x', parentKey: top.id } });
      expect([underFile.status, underFile.body.error]).toEqual([422, 'parent_not_folder']);
    });

    it('answers 404 for unknown or malformed project ids', async () => {
      expect((await get('0190c1d2-0000-7000-8000-000000000000', owner.token)).status).toBe(404);
      expect((await get('nope', owner.token)).status).toBe(404);
    });
  });
});
