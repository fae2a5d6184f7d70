import { Block, BlockService, BlockVersion, deploymentCallerOf, DeploymentService, Document, type BlockRunTarget } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

// The Block API (all but its three run endpoints, which belong to the run engine) and what the
// run wiring needs from it: the content a page run and a deployment run execute, and the
// deployment access check. Both transports, both databases.
describe.each(testDatabases())('blocks on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let member: Actor;
    let outsider: Actor;
    let teamId: string;
    let projectId: string;
    let counter = 0;

    beforeAll(async () => {
      const host = await startTestHost(db, transport);
      // Every /block and /project answer is checked against /openapi.json (status and body).
      t = host;
      [owner, member, outsider] = await Promise.all([actor(t), actor(t), actor(t)]);
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Builders' } });
      teamId = team.body.id;
      expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } })).status).toBe(201);
      projectId = (await createProject(t, owner.token, { access: 'team', teamId })).id;
    });
    afterAll(() => t?.close());

    const newBlock = async (body: Record<string, unknown> = {}, project = projectId, token = owner.token) => {
      const r = await t.request('POST', `/block/${project}`, { token, body: { name: `Block ${++counter}`, type: 'workflow', ...body } });
      expect(r.status, r.text).toBe(201);
      return r.body;
    };
    const content = doc(paragraph('b1', 'Hello', 'greeting'), paragraph('b2', 'World'));

    it('creates a block as a page of the project tree, and reads it back with its content', async () => {
      const r = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: 'Summarise', description: 'Summarises a ticket', type: 'agent', content } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        projectId,
        name: 'Summarise',
        description: 'Summarises a ticket',
        type: 'agent',
        status: 'draft',
        access: null,
        deployType: null,
        cover: null,
        inputs: [],
        version: null,
        deployedAt: null,
        installedFrom: null,
        trashedAt: null,
        content,
      });
      expect(r.body.contentHash).toMatch(/^[0-9a-f]{8}$/);
      const read = await t.request('GET', `/block/${r.body.id}`, { token: member.apiKey });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(r.body);
      // The same page through the documents API: same content and hash.
      const asDoc = await t.request('GET', `/documents/${r.body.id}/content`, { token: owner.token });
      expect([asDoc.status, asDoc.body.content_hash, asDoc.body.title]).toEqual([200, r.body.contentHash, 'Summarise']);
      const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
      expect(tree.body.filesFolder).toContainEqual({ key: r.body.id, label: 'Summarise', type: 'file', docType: 'block', isLeaf: true });
    });

    it('answers 409 for a name the project already uses, 422 for an unknown type or a bad body, 400 for bad content', async () => {
      await newBlock({ name: 'Taken' });
      const again = await t.request('POST', `/block/${projectId}`, { token: member.token, body: { name: 'Taken', type: 'tool' } });
      expect([again.status, again.body.error]).toEqual([409, 'block_name_taken']);
      const other = await createProject(t, owner.token);
      expect((await t.request('POST', `/block/${other.id}`, { token: owner.token, body: { name: 'Taken', type: 'tool' } })).status).toBe(201);
      const racing = await Promise.all([1, 2, 3].map(() => t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: 'Race', type: 'api' } })));
      expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      const unknownType = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: 'x', type: 'spreadsheet' } });
      expect([unknownType.status, unknownType.body.error, unknownType.body.details[0].field]).toEqual([422, 'validation_failed', 'type']);
      for (const body of [{ type: 'workflow' }, { name: 'x' }, { name: '', type: 'workflow' }, { name: 'x', type: 'workflow', extra: 1 }, { name: 'x', type: 'workflow', content: 'text' }]) {
        expect((await t.request('POST', `/block/${projectId}`, { token: owner.token, body })).status, JSON.stringify(body)).toBe(422);
      }
      const badContent = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: 'Bad', type: 'workflow', content: { type: 'paragraph' } } });
      expect([badContent.status, badContent.body.error]).toEqual([400, 'invalid_content']);
      const renamed = await newBlock();
      const clash = await t.request('PUT', `/block/${renamed.id}`, { token: owner.token, body: { name: 'Taken' } });
      expect([clash.status, clash.body.error]).toEqual([409, 'block_name_taken']);
      expect((await t.request('PUT', `/block/${renamed.id}`, { token: owner.token, body: { type: 'agent' } })).status).toBe(422);
    });

    it('lets scoped credentials read blocks with documents:read and change them only with documents:write', async () => {
      const block = await newBlock();
      const scoped = async (scopes: string[]) => (await t.request('POST', '/auth/api-keys', { token: owner.token, body: { name: 'scoped', scopes } })).body.token as string;
      const reader = await scoped(['documents:read']);
      const writer = await scoped(['documents:write']);
      expect((await t.request('GET', `/block/${block.id}`, { token: reader })).status).toBe(200);
      expect((await t.request('GET', `/project/${projectId}/trash`, { token: reader })).status).toBe(200);
      const refused = await t.request('PUT', `/block/${block.id}`, { token: reader, body: { description: 'x' } });
      expect([refused.status, refused.body.error]).toEqual([403, 'insufficient_scope']);
      expect((await t.request('POST', `/block/${block.id}/deploy`, { token: reader, body: { access: 'team' } })).status).toBe(403);
      expect((await t.request('PUT', `/block/${block.id}`, { token: writer, body: { description: 'x' } })).status).toBe(200);
      const other = await scoped(['chat:completions']);
      expect((await t.request('GET', `/block/${block.id}`, { token: other })).status).toBe(403);
    });

    it('documents the block type enum and the deployment access values in /openapi.json', async () => {
      const spec = (await t.request('GET', '/openapi.json')).body;
      const create = spec.components.schemas.CreateBlockRequest;
      expect(create.properties.type.enum).toEqual(['workflow', 'agent', 'tool', 'api']);
      expect(spec.components.schemas.DeployBlockRequest.properties.access.enum).toEqual(['private', 'team', 'public', 'token']);
      for (const [method, path] of [
        ['get', '/block/{pageId}'],
        ['get', '/block/list/{projectId}'],
        ['post', '/block/{projectId}'],
        ['put', '/block/{pageId}'],
        ['delete', '/block/{projectId}/{pageId}'],
        ['post', '/block/{projectId}/{pageId}/duplicate'],
        ['post', '/block/{blockId}/deploy'],
        ['get', '/block/{blockId}/next-version'],
        ['put', '/block/{bid}/deployment'],
      ]) {
        expect(spec.paths[path]?.[method], `${method} ${path}`).toBeDefined();
      }
    });

    it('lists the blocks of a project, paged, without content', async () => {
      const p = await createProject(t, owner.token);
      const a = await newBlock({ name: 'A' }, p.id);
      const b = await newBlock({ name: 'B' }, p.id);
      await newBlock({ name: 'C' }, p.id);
      const first = await t.request('GET', `/block/list/${p.id}?page=1&size=2`, { token: owner.agentToken });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ total: 3, page: 1, size: 2 });
      expect(first.body.items.map((i: any) => i.name)).toEqual(['A', 'B']);
      expect(first.body.items[0]).not.toHaveProperty('content');
      expect(first.body.items[0].contentHash).toBe(a.contentHash);
      expect(first.body.items[1].id).toBe(b.id);
      expect((await t.request('GET', `/block/list/${p.id}?page=2&size=2`, { token: owner.token })).body.items.map((i: any) => i.name)).toEqual(['C']);
      expect((await t.request('GET', `/block/list/${p.id}`, { token: outsider.token })).status).toBe(404);
    });

    it('updates name, description and content through the documents module (hash, versions, base_version)', async () => {
      const block = await newBlock({ name: 'Editable' });
      const r = await t.request('PUT', `/block/${block.id}`, { token: member.token, body: { name: 'Edited', description: 'now described', content } });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ id: block.id, name: 'Edited', description: 'now described', content });
      expect(r.body.contentHash).not.toBe(block.contentHash);
      const asDoc = await t.request('GET', `/documents/${block.id}/content`, { token: owner.token });
      expect([asDoc.body.content_hash, asDoc.body.title]).toEqual([r.body.contentHash, 'Edited']);
      const versions = await t.request('GET', `/documents/${block.id}/versions`, { token: owner.token });
      expect(versions.body.items.map((v: any) => v.source)).toEqual(['update', 'create']);
      const stale = await t.request('PUT', `/block/${block.id}`, { token: owner.token, body: { content: doc(paragraph('z', 'stale')), base_version: block.contentHash } });
      expect([stale.status, stale.body.error, stale.body.current_version]).toEqual([409, 'version_conflict', r.body.contentHash]);
      // Edit commands on the page, as on any document.
      const edit = await t.request('POST', `/documents/${block.id}/edit`, {
        token: owner.token,
        body: { base_version: r.body.contentHash, mode: 'commands', commands: [{ op: 'delete', blockId: 'b2' }] },
      });
      expect(edit.status, edit.text).toBe(200);
      const read = await t.request('GET', `/block/${block.id}`, { token: owner.token });
      expect([read.body.contentHash, read.body.content.content.length]).toEqual([edit.body.version, 1]);
      const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
      expect(tree.body.filesFolder.find((n: any) => n.key === block.id).label).toBe('Edited');
    });

    it('answers 404 for missing, hidden or malformed blocks and 403 without write', async () => {
      const block = await newBlock();
      const missingId = '0190c1d2-0000-7000-8000-000000000000';
      for (const [method, path] of [
        ['GET', `/block/${missingId}`],
        ['GET', '/block/nope'],
        ['PUT', `/block/${missingId}`],
        ['GET', `/block/${missingId}/next-version`],
      ] as const) {
        const r = await t.request(method, path, { token: owner.token, body: method === 'PUT' ? { description: 'x' } : undefined });
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      expect((await t.request('GET', `/block/${missingId}`, { token: owner.token })).body.error).toBe('block_not_found');
      const hidden = await t.request('GET', `/block/${block.id}`, { token: outsider.token });
      expect([hidden.status, hidden.body.error]).toEqual([404, 'block_not_found']);
      expect((await t.request('PUT', `/block/${block.id}`, { token: outsider.token, body: { description: 'x' } })).status).toBe(404);
      expect((await t.request('DELETE', `/block/${missingId}/${block.id}`, { token: owner.token })).status).toBe(404);
      expect((await t.request('POST', `/block/${missingId}`, { token: owner.token, body: { name: 'x', type: 'workflow' } })).body.error).toBe('project_not_found');
      // A public project: every signed-in user reads its blocks, only members write them.
      const pub = await createProject(t, owner.token, { access: 'public' });
      const pubBlock = await newBlock({}, pub.id);
      expect((await t.request('GET', `/block/${pubBlock.id}`, { token: outsider.token })).status).toBe(200);
      for (const [method, path, body] of [
        ['PUT', `/block/${pubBlock.id}`, { description: 'x' }],
        ['DELETE', `/block/${pub.id}/${pubBlock.id}`, undefined],
        ['POST', `/block/${pub.id}/${pubBlock.id}/duplicate`, undefined],
        ['POST', `/block/${pubBlock.id}/deploy`, { access: 'public' }],
        ['PUT', `/block/${pubBlock.id}/deployment`, { access: 'public' }],
      ] as const) {
        const r = await t.request(method, path, { token: outsider.token, body });
        expect([r.status, r.body.error], `${method} ${path}`).toEqual([403, 'block_access_denied']);
      }
      const create = await t.request('POST', `/block/${pub.id}`, { token: outsider.token, body: { name: 'x', type: 'workflow' } });
      expect([create.status, create.body.error]).toEqual([403, 'project_access_denied']);
      expect((await t.request('GET', `/block/${block.id}`)).status).toBe(401);
    });

    it('moves a block to the trash and restores it into its folder; confirm deletes for good', async () => {
      const p = await createProject(t, owner.token);
      const folder = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'Flows' } });
      const block = await newBlock({ name: 'Trashable', content, parentKey: folder.body.key }, p.id);
      const del = await t.request('DELETE', `/block/${p.id}/${block.id}`, { token: owner.token });
      expect([del.status, del.body]).toEqual([200, { id: block.id, result: 'trashed' }]);
      expect((await t.request('GET', `/block/${block.id}`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/documents/${block.id}/content`, { token: owner.token })).status).toBe(404);
      expect((await t.request('GET', `/block/list/${p.id}`, { token: owner.token })).body.total).toBe(0);
      const again = await t.request('DELETE', `/block/${p.id}/${block.id}`, { token: owner.token });
      expect([again.status, again.body.error]).toEqual([404, 'block_not_found']);
      let tree = await t.request('GET', `/project/${p.id}`, { token: owner.token });
      expect(tree.body.filesFolder[0].children).toEqual([]);
      const trash = await t.request('GET', `/project/${p.id}/trash`, { token: owner.token });
      expect(trash.status).toBe(200);
      expect(trash.body).toMatchObject({ total: 1, page: 1, size: 20 });
      expect(trash.body.items[0]).toMatchObject({ id: block.id, name: 'Trashable', status: 'trashed', trashedAt: expect.any(String) });
      // The name stays taken while the block is in the trash.
      expect((await t.request('POST', `/block/${p.id}`, { token: owner.token, body: { name: 'Trashable', type: 'workflow' } })).status).toBe(409);
      const restored = await t.request('POST', `/project/${p.id}/restore/${block.id}`, { token: owner.token });
      expect(restored.status).toBe(200);
      expect(restored.body).toMatchObject({ id: block.id, status: 'draft', trashedAt: null, contentHash: block.contentHash });
      tree = await t.request('GET', `/project/${p.id}`, { token: owner.token });
      expect(tree.body.filesFolder[0].children).toEqual([{ key: block.id, label: 'Trashable', type: 'file', docType: 'block', isLeaf: true }]);
      expect((await t.request('GET', `/block/${block.id}`, { token: owner.token })).body.content).toEqual(content);
      const notTrashed = await t.request('POST', `/project/${p.id}/restore/${block.id}`, { token: owner.token });
      expect([notTrashed.status, notTrashed.body.error]).toEqual([404, 'block_not_in_trash']);
      // Permanent delete, straight away or from the trash: the block, its page, history and versions.
      expect((await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'public' } })).status).toBe(201);
      const gone = await t.request('DELETE', `/block/${p.id}/${block.id}?confirm=true`, { token: owner.token });
      expect([gone.status, gone.body]).toEqual([200, { id: block.id, result: 'deleted' }]);
      expect((await t.request('GET', `/documents/${block.id}/versions`, { token: owner.token })).status).toBe(404);
      const em = t.kernel.fork();
      expect([await em.count(Block, { id: block.id }), await em.count(BlockVersion, { block: block.id }), await em.count(Document, { id: block.id })]).toEqual([0, 0, 0]);
      expect((await t.request('GET', `/project/deployment/${block.id}`, { token: outsider.token })).status).toBe(404);
      expect((await t.request('POST', `/project/${p.id}/restore/${block.id}`, { token: owner.token })).status).toBe(404);
      const second = await newBlock({ name: 'Second' }, p.id);
      await t.request('DELETE', `/block/${p.id}/${second.id}`, { token: owner.token });
      expect((await t.request('DELETE', `/block/${p.id}/${second.id}?confirm=1`, { token: owner.token })).body.result).toBe('deleted');
      expect((await t.request('GET', `/project/${p.id}/trash`, { token: owner.token })).body.total).toBe(0);
      expect((await t.request('POST', `/block/${p.id}`, { token: owner.token, body: { name: 'Trashable', type: 'workflow' } })).status).toBe(201);
    });

    it('restore-trash restores everything (or some blocks) into their folders, including blocks deleted through the documents API', async () => {
      const p = await createProject(t, owner.token);
      const folder = await t.request('POST', `/project/${p.id}/folders`, { token: owner.token, body: { label: 'Temp' } });
      const inFolder = await newBlock({ name: 'In folder', parentKey: folder.body.key }, p.id);
      const viaDocs = await newBlock({ name: 'Via docs' }, p.id);
      await t.request('DELETE', `/block/${p.id}/${inFolder.id}`, { token: owner.token });
      expect((await t.request('DELETE', `/documents/${viaDocs.id}`, { token: owner.token })).status).toBe(200);
      const trash = await t.request('GET', `/project/${p.id}/trash`, { token: owner.token });
      expect(trash.body.items.map((i: any) => i.id).sort()).toEqual([inFolder.id, viaDocs.id].sort());
      // restore-trash empties the trash by restoring everything in it.
      const all = await t.request('POST', '/project/restore-trash', { token: owner.token, body: { projectId: p.id } });
      expect(all.status).toBe(200);
      expect(all.body.projectId).toBe(p.id);
      expect(all.body.restored.sort()).toEqual([inFolder.id, viaDocs.id].sort());
      expect((await t.request('GET', `/project/${p.id}/trash`, { token: owner.token })).body.total).toBe(0);
      const tree = await t.request('GET', `/project/${p.id}`, { token: owner.token });
      expect(tree.body.filesFolder.map((n: any) => n.key)).toEqual([folder.body.key, viaDocs.id]);
      expect(tree.body.filesFolder[0].children.map((n: any) => n.key)).toEqual([inFolder.id]);
      expect((await t.request('GET', `/documents/${viaDocs.id}/content`, { token: owner.token })).status).toBe(200);
      // Only some blocks; errors.
      await t.request('DELETE', `/block/${p.id}/${inFolder.id}`, { token: owner.token });
      await t.request('DELETE', `/block/${p.id}/${viaDocs.id}`, { token: owner.token });
      const some = await t.request('POST', '/project/restore-trash', { token: owner.token, body: { projectId: p.id, blockIds: [viaDocs.id] } });
      expect(some.body.restored).toEqual([viaDocs.id]);
      expect((await t.request('GET', `/project/${p.id}/trash`, { token: owner.token })).body.items.map((i: any) => i.id)).toEqual([inFolder.id]);
      expect((await t.request('POST', '/project/restore-trash', { token: outsider.token, body: { projectId: p.id } })).status).toBe(404);
      expect((await t.request('POST', '/project/restore-trash', { token: owner.token, body: {} })).status).toBe(422);
      expect((await t.request('GET', `/project/${p.id}/trash`, { token: outsider.token })).status).toBe(404);
    });

    it('duplicates a block with its content and settings, as a draft with a free name', async () => {
      const block = await newBlock({ name: 'Original', description: 'desc', type: 'tool', content });
      await t.request('PUT', `/block/${block.id}/deployment`, {
        token: owner.token,
        body: { access: 'team', deployType: 'form', cover: 'https://example.com/c.png', inputs: [{ name: 'topic', type: 'string', required: true, description: 'What about' }] },
      });
      const copy = await t.request('POST', `/block/${projectId}/${block.id}/duplicate`, { token: member.token });
      expect(copy.status).toBe(201);
      expect(copy.body).toMatchObject({
        name: '[Copy] Original',
        description: 'desc',
        type: 'tool',
        status: 'draft',
        content,
        contentHash: block.contentHash,
        access: 'team',
        deployType: 'form',
        cover: 'https://example.com/c.png',
        inputs: [{ name: 'topic', type: 'string', required: true, description: 'What about' }],
        version: null,
      });
      expect(copy.body.id).not.toBe(block.id);
      const second = await t.request('POST', `/block/${projectId}/${block.id}/duplicate`, { token: owner.token });
      expect(second.body.name).toBe('[Copy-2] Original');
      // The copy is independent.
      await t.request('PUT', `/block/${copy.body.id}`, { token: owner.token, body: { content: doc(paragraph('n', 'changed')) } });
      expect((await t.request('GET', `/block/${block.id}`, { token: owner.token })).body.content).toEqual(content);
      expect((await t.request('POST', `/block/${projectId}/${block.id}/duplicate`, { token: outsider.token })).status).toBe(404);
    });

    it('deploys immutable versions: next-version, explicit versions, 409 on a taken one, 422 on a malformed one', async () => {
      const block = await newBlock({ name: 'Deployable', content });
      const next = await t.request('GET', `/block/${block.id}/next-version`, { token: member.token });
      expect([next.status, next.body]).toEqual([200, { blockId: block.id, version: '1', latestVersion: null }]);
      const d1 = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'team' } });
      expect(d1.status).toBe(201);
      expect(d1.body.block).toMatchObject({ id: block.id, status: 'deployed', access: 'team', version: '1', deployedAt: expect.any(String) });
      expect(d1.body.version).toMatchObject({ blockId: block.id, version: '1', contentHash: block.contentHash, access: 'team', name: 'Deployable', type: 'workflow', deployedBy: owner.userId });
      expect(d1.body).not.toHaveProperty('deploymentToken');
      expect((await t.request('GET', `/block/${block.id}/next-version`, { token: owner.token })).body).toEqual({ blockId: block.id, version: '2', latestVersion: '1' });
      const taken = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'team', version: '1' } });
      expect([taken.status, taken.body.error]).toEqual([409, 'block_version_exists']);
      const bad = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'team', version: 'v2' } });
      expect([bad.status, bad.body.error]).toEqual([422, 'invalid_version']);
      expect((await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'everyone' } })).status).toBe(422);
      expect((await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: {} })).status).toBe(422);
      // Change the page, deploy 1.5: version 1 keeps its content.
      const changed = doc(paragraph('c1', 'Changed'));
      const put = await t.request('PUT', `/block/${block.id}`, { token: owner.token, body: { content: changed } });
      const d2 = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'public', version: '1.5' } });
      expect(d2.status).toBe(201);
      expect(d2.body.version.contentHash).toBe(put.body.contentHash);
      expect((await t.request('GET', `/block/${block.id}/next-version`, { token: owner.token })).body.version).toBe('1.6');
      const racing = await Promise.all([1, 2, 3].map(() => t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'public', version: '7' } })));
      expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      // Deployment detail of a pinned version, and of the latest.
      const pinned = await t.request('GET', `/project/deployment/${block.id}?version=1`, { token: owner.token });
      expect(pinned.status).toBe(200);
      expect(pinned.body).toMatchObject({ blockId: block.id, projectId, version: '1', latestVersion: '7', contentHash: block.contentHash, content, access: 'public', versions: ['7', '1.5', '1'] });
      const latest = await t.request('GET', `/project/deployment/${block.id}`, { token: owner.token });
      expect([latest.body.version, latest.body.content]).toEqual(['7', changed]);
      const missingVersion = await t.request('GET', `/project/deployment/${block.id}?version=9`, { token: owner.token });
      expect([missingVersion.status, missingVersion.body.error]).toEqual([404, 'block_version_not_found']);
      // Version history.
      const history = await t.request('GET', `/project/${projectId}/versions/${block.id}?size=2`, { token: member.token });
      expect(history.status).toBe(200);
      expect(history.body).toMatchObject({ total: 3, page: 1, size: 2 });
      expect(history.body.items.map((v: any) => v.version)).toEqual(['7', '1.5']);
      expect(history.body.items[0]).not.toHaveProperty('content');
      expect((await t.request('GET', `/project/${projectId}/versions/${block.id}`, { token: outsider.token })).status).toBe(404);
      const other = await createProject(t, owner.token);
      expect((await t.request('GET', `/project/${other.id}/versions/${block.id}`, { token: owner.token })).status).toBe(404);
    });

    it('sets the deployment: the first PUT publishes version 1, later ones change settings only', async () => {
      const block = await newBlock({ name: 'Settings', content });
      const first = await t.request('PUT', `/block/${block.id}/deployment`, {
        token: owner.token,
        body: { inputs: [{ name: 'q', type: 'string', required: true, default: 'hi' }], deployType: 'api', cover: 'c.png' },
      });
      expect(first.status).toBe(200);
      expect(first.body.block).toMatchObject({ status: 'deployed', access: 'private', deployType: 'api', cover: 'c.png', version: '1', inputs: [{ name: 'q', type: 'string', required: true, default: 'hi' }] });
      expect(first.body.version).toMatchObject({ version: '1', access: 'private', deployType: 'api', inputs: [{ name: 'q', type: 'string', required: true, default: 'hi' }] });
      const second = await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { access: 'public', cover: 'd.png' } });
      expect(second.body.version).toBeNull();
      expect(second.body.block).toMatchObject({ access: 'public', cover: 'd.png', deployType: 'api', version: '1' });
      expect((await t.request('GET', `/project/${projectId}/versions/${block.id}`, { token: owner.token })).body.total).toBe(1);
      for (const body of [{ access: 'world' }, { inputs: [{ name: 'q' }] }, { inputs: 'q' }, { cover: 5 }]) {
        expect((await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body })).status, JSON.stringify(body)).toBe(422);
      }
    });

    it('lists, details and searches deployments of a project; installs a pinned version into another project', async () => {
      const p = await createProject(t, owner.token, { access: 'team', teamId });
      const block = await newBlock({ name: 'Shared tool', type: 'tool', description: 'a tool', content }, p.id);
      await newBlock({ name: 'Never deployed' }, p.id);
      await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'team' } });
      await t.request('PUT', `/block/${block.id}`, { token: owner.token, body: { content: doc(paragraph('v2', 'second')) } });
      await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'team' } });
      const list = await t.request('GET', `/project/${p.id}/deployments`, { token: member.token });
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 1, page: 1, size: 20 });
      expect(list.body.items[0]).toMatchObject({ id: block.id, blockId: block.id, projectId: p.id, name: 'Shared tool', type: 'tool', access: 'team', latestVersion: '2' });
      // Install version 1 into the member's own project.
      const target = await createProject(t, member.token, { access: 'private' });
      const installed = await t.request('POST', `/project/${target.id}/install/${block.id}`, { token: member.token, body: { version: '1' } });
      expect(installed.status).toBe(201);
      expect(installed.body).toMatchObject({ projectId: target.id, name: 'Shared tool', type: 'tool', description: 'a tool', content, contentHash: block.contentHash, status: 'draft', installedFrom: { blockId: block.id, version: '1' } });
      const clash = await t.request('POST', `/project/${target.id}/install/${block.id}`, { token: member.token });
      expect([clash.status, clash.body.error]).toEqual([409, 'block_name_taken']);
      const latest = await t.request('POST', `/project/${target.id}/install/${block.id}`, { token: member.token, body: { name: 'Shared tool v2' } });
      expect(latest.body.installedFrom).toEqual({ blockId: block.id, version: '2' });
      expect((await t.request('POST', `/project/${target.id}/install/${block.id}`, { token: member.token, body: { version: '8', name: 'x' } })).body.error).toBe('block_version_not_found');
      // An outsider sees neither the team deployment nor the target project.
      const own = await createProject(t, outsider.token);
      const hidden = await t.request('POST', `/project/${own.id}/install/${block.id}`, { token: outsider.token, body: {} });
      expect([hidden.status, hidden.body.error]).toEqual([404, 'block_not_found']);
      expect((await t.request('GET', `/project/deployment/${block.id}`, { token: outsider.token })).status).toBe(404);
      expect((await t.request('POST', `/project/${target.id}/install/${block.id}`, { token: outsider.token, body: {} })).body.error).toBe('project_not_found');
      // A public deployment is visible to everyone signed in and installable.
      await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { access: 'public' } });
      expect((await t.request('GET', `/project/deployment/${block.id}`, { token: outsider.token })).status).toBe(200);
      expect((await t.request('POST', `/project/${own.id}/install/${block.id}`, { token: outsider.token, body: {} })).status).toBe(201);
      // Search: pages installed from the block, with the next version of their source.
      const pages = await t.request('GET', `/project/${target.id}/search?type=page&fromBid=${block.id}&nextVersion=true`, { token: member.token });
      expect(pages.status).toBe(200);
      expect(pages.body).toMatchObject({ type: 'page', total: 2 });
      expect(pages.body.items.map((i: any) => [i.name, i.installedFrom.version, i.nextVersion])).toEqual([
        ['Shared tool', '1', '3'],
        ['Shared tool v2', '2', '3'],
      ]);
      const named = await t.request('GET', `/project/${target.id}/search?type=page&q=V2`, { token: member.token });
      expect(named.status, named.text).toBe(200);
      expect(named.body.items.map((i: any) => i.name)).toEqual(['Shared tool v2']);
      const deps = await t.request('GET', `/project/${p.id}/search?type=deployment&nextVersion=1`, { token: owner.token });
      expect(deps.body).toMatchObject({ type: 'deployment', total: 1 });
      expect(deps.body.items[0]).toMatchObject({ blockId: block.id, latestVersion: '2', nextVersion: '3' });
      expect((await t.request('GET', `/project/${p.id}/search?type=deployment&fromBid=${target.id}`, { token: owner.token })).body.total).toBe(0);
      const noType = await t.request('GET', `/project/${p.id}/search`, { token: owner.token });
      expect([noType.status, noType.body.error]).toEqual([422, 'validation_failed']);
      expect((await t.request('GET', `/project/${p.id}/search?type=file`, { token: owner.token })).status).toBe(422);
      expect((await t.request('GET', `/project/${p.id}/search?type=page`, { token: outsider.token })).status).toBe(404);
      expect((await t.request('GET', `/project/${p.id}/deployments`, { token: outsider.token })).status).toBe(404);
      // A trashed block leaves the deployment list.
      await t.request('DELETE', `/block/${p.id}/${block.id}`, { token: owner.token });
      expect((await t.request('GET', `/project/${p.id}/deployments`, { token: owner.token })).body.total).toBe(0);
      expect((await t.request('GET', `/project/deployment/${block.id}`, { token: owner.token })).status).toBe(404);
    });

    it('resolves what a page run and a deployment run execute, with the deployment access check', async () => {
      const kernel = t.kernel;
      const blocks = kernel.get(BlockService);
      const deployments = kernel.get(DeploymentService);
      const principal = (userId: string) => ({ kind: 'jwt' as const, userId, scopes: undefined }) as never;
      const block = await newBlock({ name: 'Runnable', content });
      const page: BlockRunTarget = await blocks.resolvePageRun(kernel.fork(), principal(member.userId), block.id);
      expect(page).toMatchObject({ blockId: block.id, documentId: block.id, projectId, teamId, source: 'page', version: null, content, contentHash: block.contentHash, userId: member.userId });
      await expect(blocks.resolvePageRun(kernel.fork(), principal(outsider.userId), block.id)).rejects.toMatchObject({ code: 'block_not_found' });
      // Not deployed yet.
      await expect(deployments.resolveApiRun(kernel.fork(), { principal: principal(owner.userId) }, block.id)).rejects.toMatchObject({ code: 'deployment_not_found' });
      await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'private' } });
      const changed = doc(paragraph('x', 'changed'));
      await t.request('PUT', `/block/${block.id}`, { token: owner.token, body: { content: changed } });
      // The page run sees the edit; the deployment run stays on version 1 until version 2 is deployed.
      expect((await blocks.resolvePageRun(kernel.fork(), principal(owner.userId), block.id)).content).toEqual(changed);
      const v1 = await deployments.resolveApiRun(kernel.fork(), { principal: principal(owner.userId) }, block.id);
      expect(v1).toMatchObject({ source: 'deployment', version: '1', content, contentHash: block.contentHash });
      const deployed = await t.request('POST', `/block/${block.id}/deploy`, { token: owner.token, body: { access: 'private' } });
      expect((await deployments.resolveApiRun(kernel.fork(), { principal: principal(owner.userId) }, block.id)).content).toEqual(changed);
      expect((await deployments.resolveApiRun(kernel.fork(), { principal: principal(owner.userId) }, block.id, '1')).content).toEqual(content);
      await expect(deployments.resolveApiRun(kernel.fork(), { principal: principal(owner.userId) }, block.id, '3')).rejects.toMatchObject({ code: 'block_version_not_found' });
      expect(deployed.status).toBe(201);
      const call = (caller: { principal: unknown; deploymentToken?: string }) => deployments.authorize(kernel.fork(), caller as never, block.id);
      // private: execute permission only.
      await expect(call({ principal: principal(member.userId) })).resolves.toMatchObject({ id: block.id });
      await expect(call({ principal: principal(outsider.userId) })).rejects.toMatchObject({ code: 'block_not_found' });
      await expect(call({ principal: null })).rejects.toMatchObject({ code: 'authentication_required' });
      // team: members of the project's team, even when the project is private.
      const privateProject = await createProject(t, owner.token, { access: 'private', teamId });
      const privBlock = await newBlock({ content }, privateProject.id);
      await t.request('POST', `/block/${privBlock.id}/deploy`, { token: owner.token, body: { access: 'team' } });
      await expect(deployments.authorize(kernel.fork(), { principal: principal(member.userId) }, privBlock.id)).resolves.toMatchObject({ id: privBlock.id });
      await expect(deployments.authorize(kernel.fork(), { principal: principal(outsider.userId) }, privBlock.id)).rejects.toMatchObject({ code: 'block_not_found' });
      await expect(deployments.authorize(kernel.fork(), { principal: null }, privBlock.id)).rejects.toMatchObject({ code: 'authentication_required' });
      // public: anyone, without a credential.
      await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { access: 'public' } });
      await expect(call({ principal: null })).resolves.toMatchObject({ id: block.id });
      await expect(call({ principal: principal(outsider.userId) })).resolves.toMatchObject({ id: block.id });
      // token: the deployment token (issued once), or the execute permission.
      const tokenSet = await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { access: 'token' } });
      const deploymentToken: string = tokenSet.body.deploymentToken;
      expect(deploymentToken).toMatch(/^trd_/);
      expect((await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { cover: 'x' } })).body).not.toHaveProperty('deploymentToken');
      await expect(call(deploymentCallerOf({ principal: null, headers: { 'x-deployment-token': deploymentToken } }))).resolves.toMatchObject({ id: block.id });
      await expect(call(deploymentCallerOf({ principal: null, headers: {} }))).rejects.toMatchObject({ code: 'authentication_required' });
      await expect(call({ principal: principal(outsider.userId), deploymentToken })).resolves.toMatchObject({ id: block.id });
      await expect(call({ principal: null, deploymentToken: `${deploymentToken}x` })).rejects.toMatchObject({ code: 'authentication_required' });
      // Without the token an outsider learns nothing: the 404 of private and team deployments.
      await expect(call({ principal: principal(outsider.userId) })).rejects.toMatchObject({ code: 'block_not_found' });
      await expect(call({ principal: principal(member.userId) })).resolves.toMatchObject({ id: block.id });
      const rotated = await t.request('PUT', `/block/${block.id}/deployment`, { token: owner.token, body: { rotateToken: true } });
      expect(rotated.body.deploymentToken).toMatch(/^trd_/);
      await expect(call({ principal: null, deploymentToken })).rejects.toMatchObject({ code: 'authentication_required' });
      await expect(call({ principal: null, deploymentToken: rotated.body.deploymentToken })).resolves.toMatchObject({ id: block.id });
      // A public-project reader without execute cannot call a private deployment.
      const pub = await createProject(t, owner.token, { access: 'public' });
      const pubBlock = await newBlock({ content }, pub.id);
      await t.request('POST', `/block/${pubBlock.id}/deploy`, { token: owner.token, body: { access: 'private' } });
      await expect(deployments.authorize(kernel.fork(), { principal: principal(outsider.userId) }, pubBlock.id)).rejects.toMatchObject({ code: 'deployment_access_denied' });
      // A trashed block cannot be called.
      await t.request('DELETE', `/block/${projectId}/${block.id}`, { token: owner.token });
      await expect(call({ principal: null, deploymentToken: rotated.body.deploymentToken })).rejects.toMatchObject({ code: 'block_not_found' });
    });
  });
});
