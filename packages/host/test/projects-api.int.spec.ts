import { Block, BlockVersion, Document, projectRunsServiceIdentifier, provide, type ProjectRuns, type ProjectRunSummary } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

/**
 * Run records belong to the runs module; until it binds `ProjectRuns`, this in-memory list stands
 * in for it so that the route's contract (access check first, the project's runs, paging) is tested.
 */
class RecordedRuns implements ProjectRuns {
  readonly byProject = new Map<string, ProjectRunSummary[]>();
  readonly calls: string[] = [];
  async list(_em: unknown, projectId: string, page: { offset: number; size: number }) {
    this.calls.push(projectId);
    const all = this.byProject.get(projectId) ?? [];
    return { items: all.slice(page.offset, page.offset + page.size), total: all.length };
  }
}

// The Project API beyond create and read: list, update, delete and runs. (Deployments, install,
// search, trash, restore and versions are in blocks.int.spec.ts.) Both transports, both databases.
describe.each(testDatabases())('project API on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let bare: TestHost;
    let owner: Actor;
    let member: Actor;
    let outsider: Actor;
    let teamId: string;
    const runs = new RecordedRuns();

    beforeAll(async () => {
      const host = await startTestHost(db, transport, { adapters: [provide(projectRunsServiceIdentifier, runs)] });
      // Every /project and /block answer is checked against /openapi.json (status and body).
      t = host;
      bare = await startTestHost(db, transport);
      [owner, member, outsider] = await Promise.all([actor(t), actor(t), actor(t)]);
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Crew' } });
      teamId = team.body.id;
      expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } })).status).toBe(201);
    });
    afterAll(async () => {
      await t?.close();
      await bare?.close();
    });

    it('lists the projects you own and the non-private projects of your teams, paged, without file trees', async () => {
      const mine = await createProject(t, member.token, { access: 'private' });
      const shared = await createProject(t, owner.token, { access: 'team', teamId });
      const hidden = await createProject(t, owner.token, { access: 'private', teamId });
      const pub = await createProject(t, outsider.token, { access: 'public' });
      const r = await t.request('GET', '/project/list', { token: member.token });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ page: 1, size: 20, total: 2 });
      const ids = r.body.items.map((p: any) => p.id);
      expect(ids).toEqual([shared.id, mine.id]);
      expect(ids).not.toContain(hidden.id);
      expect(ids).not.toContain(pub.id);
      expect(r.body.items[0]).not.toHaveProperty('filesFolder');
      expect(r.body.items[0]).toMatchObject({ name: shared.name, access: 'team', teamId, ownerId: owner.userId, permissions: ['read', 'write', 'execute'] });
      const paged = await t.request('GET', '/project/list?page=2&size=1', { token: member.apiKey });
      expect(paged.body).toMatchObject({ page: 2, size: 1, total: 2 });
      expect(paged.body.items.map((p: any) => p.id)).toEqual([mine.id]);
      expect((await t.request('GET', '/project/list?size=0', { token: member.token })).status).toBe(422);
      expect((await t.request('GET', '/project/list')).status).toBe(401);
    });

    it('updates name, description, tools and access; 409 on a taken name; only the owner changes access', async () => {
      const p = await createProject(t, owner.token, { access: 'team', teamId });
      const other = await createProject(t, owner.token, { access: 'team', teamId });
      await createDocument(t, owner.token, p.id, { title: 'Kept' });
      const r = await t.request('PUT', `/project/${p.id}`, { token: member.token, body: { name: 'Renamed', description: 'about', tools: ['a', 'a', 'b'] } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ id: p.id, name: 'Renamed', description: 'about', tools: ['a', 'b'], access: 'team' });
      expect(r.body.filesFolder.map((n: any) => n.label)).toEqual(['Kept']);
      expect((await t.request('GET', `/project/${p.id}`, { token: owner.token })).body.name).toBe('Renamed');
      const taken = await t.request('PUT', `/project/${p.id}`, { token: owner.token, body: { name: other.name } });
      expect([taken.status, taken.body.error]).toEqual([409, 'project_name_taken']);
      expect((await t.request('PUT', `/project/${p.id}`, { token: owner.token, body: { name: 'Renamed' } })).status).toBe(200);
      const access = await t.request('PUT', `/project/${p.id}`, { token: member.token, body: { access: 'private' } });
      expect([access.status, access.body.error]).toEqual([403, 'project_owner_required']);
      const byOwner = await t.request('PUT', `/project/${p.id}`, { token: owner.token, body: { access: 'private' } });
      expect([byOwner.status, byOwner.body.access]).toEqual([200, 'private']);
      expect((await t.request('GET', `/project/${p.id}`, { token: member.token })).status).toBe(404);
      for (const body of [{ access: 'world' }, { name: '' }, { tools: 'x' }, { extra: 1 }]) {
        expect((await t.request('PUT', `/project/${p.id}`, { token: owner.token, body })).status, JSON.stringify(body)).toBe(422);
      }
      expect((await t.request('PUT', `/project/${p.id}`, { token: outsider.token, body: { name: 'x' } })).status).toBe(404);
      const pub = await createProject(t, owner.token, { access: 'public' });
      const reader = await t.request('PUT', `/project/${pub.id}`, { token: outsider.token, body: { name: 'x' } });
      expect([reader.status, reader.body.error]).toEqual([403, 'project_access_denied']);
    });

    it('deletes a project with its documents and blocks: owner only', async () => {
      const p = await createProject(t, owner.token, { access: 'team', teamId });
      const d = await createDocument(t, owner.token, p.id, { title: 'Gone', content: doc(paragraph('a', 'x')) });
      const block = await t.request('POST', `/block/${p.id}`, { token: owner.token, body: { name: 'Flow', type: 'workflow' } });
      await t.request('POST', `/block/${block.body.id}/deploy`, { token: owner.token, body: { access: 'public' } });
      const byMember = await t.request('DELETE', `/project/${p.id}`, { token: member.token });
      expect([byMember.status, byMember.body.error]).toEqual([403, 'project_owner_required']);
      expect((await t.request('DELETE', `/project/${p.id}`, { token: outsider.token })).status).toBe(404);
      const r = await t.request('DELETE', `/project/${p.id}`, { token: owner.token });
      expect([r.status, r.body]).toEqual([200, { id: p.id, deleted: true }]);
      expect((await t.request('GET', `/project/${p.id}`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/documents/${d.id}/content`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/block/${block.body.id}`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/project/deployment/${block.body.id}`, { token: outsider.token })).status).toBe(404);
      expect((await t.request('DELETE', `/project/${p.id}`, { token: owner.token })).status).toBe(404);
      // Nothing of it is left in the database.
      const em = t.kernel.fork();
      expect(await em.count(Document, { project: p.id })).toBe(0);
      expect(await em.count(Block, { id: block.body.id })).toBe(0);
      expect(await em.count(BlockVersion, { block: block.body.id })).toBe(0);
      // The name is free again.
      expect((await t.request('POST', '/project', { token: owner.token, body: { name: p.name, tools: [], access: 'team', teamId } })).status).toBe(201);
    });

    it("lists a project's runs through ProjectRuns, after the access check", async () => {
      const p = await createProject(t, owner.token, { access: 'team', teamId });
      const at = (i: number) => new Date(Date.UTC(2026, 10, 24, 3, 0, i)).toISOString();
      runs.byProject.set(
        p.id,
        [3, 2, 1].map((i) => ({ id: `run-${i}`, documentId: 'doc', status: 'completed', createdAt: at(i), updatedAt: at(i), duration: i })),
      );
      const r = await t.request('GET', `/project/${p.id}/runs?size=2`, { token: member.token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        items: [
          { id: 'run-3', documentId: 'doc', status: 'completed', createdAt: at(3), updatedAt: at(3), duration: 3 },
          { id: 'run-2', documentId: 'doc', status: 'completed', createdAt: at(2), updatedAt: at(2), duration: 2 },
        ],
        total: 3,
        page: 1,
        size: 2,
      });
      expect((await t.request('GET', `/project/${p.id}/runs?page=2&size=2`, { token: owner.token })).body.items.map((i: any) => i.id)).toEqual(['run-1']);
      const before = runs.calls.length;
      expect((await t.request('GET', `/project/${p.id}/runs`, { token: outsider.token })).status).toBe(404);
      expect((await t.request('GET', '/project/nope/runs', { token: owner.token })).status).toBe(404);
      expect(runs.calls.length).toBe(before);
      // Without a module that records runs, a project has none.
      const u = await bare.register();
      const q = await createProject(bare, u.token);
      expect((await bare.request('GET', `/project/${q.id}/runs`, { token: u.token })).body).toEqual({ items: [], total: 0, page: 1, size: 20 });
    });

    it('keeps the existing project routes and documents every Project API endpoint in /openapi.json', async () => {
      const spec = (await t.request('GET', '/openapi.json')).body;
      for (const [method, path] of [
        ['post', '/project'],
        ['get', '/project/list'],
        ['get', '/project/{projectId}'],
        ['put', '/project/{projectId}'],
        ['delete', '/project/{projectId}'],
        ['get', '/project/{projectId}/runs'],
        ['get', '/project/{projectId}/deployments'],
        ['get', '/project/deployment/{blockId}'],
        ['post', '/project/{projectId}/install/{blockId}'],
        ['get', '/project/{projectId}/search'],
        ['get', '/project/{projectId}/trash'],
        ['get', '/project/{pid}/versions/{bid}'],
        ['post', '/project/{pid}/restore/{bid}'],
        ['post', '/project/restore-trash'],
        ['post', '/project/{projectId}/folders'],
      ]) {
        expect(spec.paths[path]?.[method], `${method} ${path}`).toBeDefined();
      }
    });
  });
});
