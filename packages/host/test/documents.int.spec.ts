import { canonicalJson, contentHash, fnv1a32Hex } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

// Documents over HTTP on both transports and both databases: content and its hash, markdown-ir,
// the edit endpoint (commands, whole content, conflicts, comments), delete, duplicate, versions
// and the UI preview endpoints. Collaborative editing is in collab.int.spec.ts.
describe.each(testDatabases())('documents on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let stranger: Actor;
    let reader: Actor;
    let projectId: string;
    let publicProjectId: string;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { documents: { maxContentBytes: 8192 } } });
      [owner, stranger, reader] = await Promise.all([actor(t), actor(t), actor(t)]);
      projectId = (await createProject(t, owner.token)).id;
      publicProjectId = (await createProject(t, owner.token, { access: 'public' })).id;
    });
    afterAll(() => t?.close());

    const content = (id: string, token = owner.token, query = '') => t.request('GET', `/documents/${id}/content${query}`, { token });
    const edit = (id: string, body: unknown, token = owner.token) => t.request('POST', `/documents/${id}/edit`, { token, body });

    describe('content and hash', () => {
      it('creates a document in the file tree and reads it back with its FNV-1a content hash', async () => {
        const body = doc(paragraph('p1', 'Hello', 'intro'), { type: 'codeBlock', attrs: { language: 'js', id: 'c1' }, content: [{ type: 'text', text: 'let x = 1;' }] });
        const created = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'Readme', content: body } });
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({ project_id: projectId, title: 'Readme', content_source: 'rest', node: { key: created.body.id, label: 'Readme', type: 'file', docType: 'document', isLeaf: true } });
        const r = await content(created.body.id);
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ title: 'Readme', content: body, content_hash: created.body.content_hash });
        expect(typeof r.body.updated_at).toBe('string');
        // The hash is FNV-1a over the canonical JSON, whatever key order the database hands back.
        expect(r.body.content_hash).toMatch(/^[0-9a-f]{8}$/);
        expect(r.body.content_hash).toBe(fnv1a32Hex(canonicalJson(r.body.content)));
        expect(r.body.content_hash).toBe(contentHash(body));
        const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
        expect(tree.body.filesFolder).toContainEqual({ key: created.body.id, label: 'Readme', type: 'file', docType: 'document', isLeaf: true });
      });

      it('gives top-level blocks without an id one, and keeps content in normal form', async () => {
        const d = await createDocument(t, owner.token, projectId, {
          content: { type: 'doc', content: [{ type: 'paragraph', attrs: {}, content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }, { type: 'text', text: '' }], marks: [] }] },
        });
        const block = d.content.content[0];
        expect(block.attrs.id).toMatch(/.+/);
        expect(block).toEqual({ type: 'paragraph', attrs: { id: block.attrs.id }, content: [{ type: 'text', text: 'ab' }] });
      });

      it('reads with a JWT, an API key or an agent token, and answers 404 for missing or hidden documents', async () => {
        const d = await createDocument(t, owner.token, projectId);
        for (const token of [owner.token, owner.apiKey, owner.agentToken]) expect((await content(d.id, token)).status).toBe(200);
        expect((await content(d.id, stranger.token)).status).toBe(404);
        expect((await content(d.id, stranger.token)).body.error).toBe('document_not_found');
        expect((await content('0190c1d2-0000-7000-8000-000000000000')).status).toBe(404);
        expect((await content('not-a-uuid')).status).toBe(404);
        expect((await t.request('GET', `/documents/${d.id}/content`)).status).toBe(401);
      });

      it('answers markdown-ir, with // comment lines only when asked and never for agent tokens', async () => {
        const d = await createDocument(t, owner.token, projectId, {
          content: doc(paragraph('p1', 'Visible [text]'), paragraph('p2', '// a note for people')),
        });
        const plain = await content(d.id, owner.token, '?format=markdown-ir');
        expect(plain.status).toBe(200);
        expect(plain.body.content).toBe(':::paragraph {"id":"p1"}\nVisible \\[text]\n:::\n\n:::paragraph {"id":"p2"}\n:::\n');
        const kept = await content(d.id, owner.token, '?format=markdown-ir&keep_comments=1');
        expect(kept.body.content).toContain('\n// a note for people\n');
        expect((await content(d.id, owner.token, '?format=markdown-ir&keep_comments=true')).body.content).toContain('// a note');
        const agent = await content(d.id, owner.agentToken, '?format=markdown-ir&keep_comments=1');
        expect(agent.body.content).not.toContain('//');
        expect(agent.body.content_hash).toBe(d.content_hash);
        expect((await content(d.id, owner.token, '?format=html')).status).toBe(400);
      });

      it('creates from markdown-ir, in a folder, and refuses bad parents', async () => {
        const folder = await t.request('POST', `/project/${projectId}/folders`, { token: owner.token, body: { label: 'Specs' } });
        expect(folder.status).toBe(201);
        const d = await createDocument(t, owner.token, projectId, {
          title: 'From text',
          parentKey: folder.body.key,
          content_format: 'markdown-ir',
          content: ':::heading {"id":"h","level":2}\nTitle\n:::\nloose paragraph\n',
        });
        expect(d.content).toEqual({ type: 'doc', content: [{ type: 'heading', attrs: { id: 'h', level: 2 }, content: [{ type: 'text', text: 'Title' }] }, { type: 'paragraph', attrs: { id: expect.any(String) }, content: [{ type: 'text', text: 'loose paragraph' }] }] });
        const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
        const specs = tree.body.filesFolder.find((n: any) => n.key === folder.body.key);
        expect(specs.children).toEqual([{ key: d.id, label: 'From text', type: 'file', docType: 'document', isLeaf: true }]);
        const missingParent = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'x', parentKey: 'nope' } });
        expect([missingParent.status, missingParent.body.error]).toEqual([404, 'node_not_found']);
        const fileParent = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'x', parentKey: d.id } });
        expect([fileParent.status, fileParent.body.error]).toEqual([422, 'parent_not_folder']);
      });

      it('refuses invalid content with 400 and oversized content with 413', async () => {
        const cases: unknown[] = [
          { type: 'paragraph' },
          { type: 'doc', content: [{ type: 'text', text: 'top-level text' }] },
          { type: 'doc', content: [{ type: 'bad type!' }] },
          { type: 'doc', content: [{ type: 'p', attrs: { id: 'x\u0000' } }] },
          { type: 'doc', content: [paragraph('same', 'a'), paragraph('same', 'b')] },
          { type: 'doc', content: [{ type: 'p', extra: 1 }] },
        ];
        for (const bad of cases) {
          const r = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'bad', content: bad } });
          expect(r.status, JSON.stringify(bad)).toBe(400);
          // A NUL is refused at the edge (invalid_characters) before the content rules run.
          expect(['invalid_content', 'duplicate_block_id', 'invalid_characters']).toContain(r.body.error);
        }
        const badIr = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'bad', content: ':::paragraph\nnever closed', content_format: 'markdown-ir' } });
        expect([badIr.status, badIr.body.error]).toEqual([400, 'invalid_markdown_ir']);
        const big = await t.request('POST', '/documents', { token: owner.token, body: { projectId, title: 'big', content: doc(paragraph('p', 'x'.repeat(9000))) } });
        expect([big.status, big.body.error]).toEqual([413, 'content_too_large']);
        const none = await t.request('POST', '/documents', { token: owner.token, body: { title: 'orphan' } });
        expect([none.status, none.body.error]).toEqual([400, 'validation_failed']);
        const untitled = await t.request('POST', '/documents', { token: owner.token, body: { projectId } });
        expect(untitled.status).toBe(400);
      });

      it('needs write permission in the project to create (403) and hides projects from outsiders (404)', async () => {
        const r = await t.request('POST', '/documents', { token: reader.token, body: { projectId: publicProjectId, title: 'x' } });
        expect([r.status, r.body.error]).toEqual([403, 'project_access_denied']);
        const hidden = await t.request('POST', '/documents', { token: stranger.token, body: { projectId, title: 'x' } });
        expect([hidden.status, hidden.body.error]).toEqual([404, 'project_not_found']);
      });

      it('edits title and content through POST /documents with documentId', async () => {
        const d = await createDocument(t, owner.token, projectId, { title: 'Old', content: doc(paragraph('a', 'one')) });
        const renamed = await t.request('POST', '/documents', { token: owner.token, body: { documentId: d.id, title: 'New' } });
        expect(renamed.status).toBe(200);
        expect(renamed.body).toMatchObject({ id: d.id, title: 'New', content_hash: d.content_hash });
        const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
        expect(tree.body.filesFolder.find((n: any) => n.key === d.id).label).toBe('New');
        const stale = await t.request('POST', '/documents', { token: owner.token, body: { documentId: d.id, content: doc(paragraph('a', 'two')), base_version: '00000000' } });
        expect([stale.status, stale.body.error]).toEqual([409, 'version_conflict']);
        const updated = await t.request('POST', '/documents', { token: owner.token, body: { documentId: d.id, content: doc(paragraph('a', 'two')), base_version: d.content_hash } });
        expect(updated.status).toBe(200);
        expect(updated.body.content).toEqual(doc(paragraph('a', 'two')));
        expect(updated.body.content_hash).not.toBe(d.content_hash);
      });
    });

    describe('edit', () => {
      it('applies every command in order and answers the results', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'Alpha', 'first'), paragraph('b', 'Beta'), paragraph('c', 'Gamma')) });
        const r = await edit(d.id, {
          base_version: d.content_hash,
          mode: 'commands',
          commands: [
            { op: 'list' },
            { op: 'read', blockId: 'a' },
            { op: 'read_range', from: 'a', to: 'b' },
            { op: 'write', blockId: 'b', content: 'Bravo' },
            { op: 'insert', block: paragraph('z', 'Zulu'), after: null },
            { op: 'delete', blockId: 'c' },
            { op: 'replace', blockId: 'a', block: { type: 'heading', attrs: { level: 1 }, content: [{ type: 'text', text: 'Alpha!' }] } },
            { op: 'move', blockId: 'z' },
            { op: 'str_replace', blockId: 'b', old_str: 'rav', new_str: 'RAV' },
          ],
        });
        expect(r.status).toBe(200);
        expect(r.body.success).toBe(true);
        expect(r.body.results.map((x: any) => x.op)).toEqual(['list', 'read', 'read_range', 'write', 'insert', 'delete', 'replace', 'move', 'str_replace']);
        expect(r.body.results[0].data).toEqual([
          { id: 'a', type: 'paragraph', name: 'first', index: 0 },
          { id: 'b', type: 'paragraph', name: null, index: 1 },
          { id: 'c', type: 'paragraph', name: null, index: 2 },
        ]);
        expect(r.body.results[1].data).toEqual(paragraph('a', 'Alpha', 'first'));
        expect(r.body.results[2].data).toHaveLength(2);
        const after = await content(d.id);
        expect(after.body.content).toEqual(doc({ type: 'heading', attrs: { id: 'a', level: 1 }, content: [{ type: 'text', text: 'Alpha!' }] }, paragraph('b', 'BRAVo'), paragraph('z', 'Zulu')));
        expect(r.body.version).toBe(after.body.content_hash);
      });

      it('is all or nothing: a failing command saves nothing and says which one failed and why', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'Alpha')) });
        const r = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'changed' }, { op: 'delete', blockId: 'ghost' }] });
        expect(r.status).toBe(400);
        expect(r.body).toMatchObject({ error: 'command_failed', command_index: 1, op: 'delete', reason: 'block_not_found' });
        expect(r.body.message).toMatch(/Command 1/);
        const after = await content(d.id);
        expect(after.body.content_hash).toBe(d.content_hash);
        expect(after.body.content).toEqual(doc(paragraph('a', 'Alpha')));
        const twice = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'banana' }, { op: 'str_replace', blockId: 'a', old_str: 'an', new_str: 'AN' }] });
        expect(twice.body).toMatchObject({ error: 'command_failed', command_index: 1, reason: 'multiple_matches' });
      });

      it('replaces the whole content, as JSON or markdown-ir', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'Alpha')) });
        const json = await edit(d.id, { base_version: d.content_hash, mode: 'content', content: doc(paragraph('a', 'Replaced')) });
        expect(json.status).toBe(200);
        expect(json.body.results).toEqual([]);
        const ir = await edit(d.id, { base_version: json.body.version, mode: 'content', content_format: 'markdown-ir', content: ':::paragraph {"id":"a"}\n[bold]{bold} move\n:::\n' });
        expect(ir.status).toBe(200);
        expect((await content(d.id)).body.content).toEqual(doc({ type: 'paragraph', attrs: { id: 'a' }, content: [{ type: 'text', text: 'bold', marks: [{ type: 'bold' }] }, { type: 'text', text: ' move' }] }));
      });

      it('answers 409 version_conflict with the current version and content', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'Alpha')) });
        const first = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'One' }] });
        expect(first.status).toBe(200);
        const stale = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'Two' }] });
        expect(stale.status).toBe(409);
        expect(stale.body).toEqual({ error: 'version_conflict', message: expect.any(String), current_version: first.body.version, current_content: doc(paragraph('a', 'One')) });
      });

      it('refuses a missing base_version, an invalid mode and empty commands with 400', async () => {
        const d = await createDocument(t, owner.token, projectId);
        const noBase = await edit(d.id, { mode: 'commands', commands: [{ op: 'list' }] });
        expect([noBase.status, noBase.body.error]).toEqual([400, 'validation_failed']);
        expect(noBase.body.details).toContainEqual(expect.objectContaining({ field: 'base_version' }));
        expect((await edit(d.id, { base_version: d.content_hash, mode: 'patch' })).status).toBe(400);
        const empty = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [] });
        expect([empty.status, empty.body.error]).toEqual([400, 'validation_failed']);
        expect((await edit(d.id, { base_version: d.content_hash, mode: 'content' })).status).toBe(400);
      });

      it('needs write permission (403) and hides documents from outsiders (404)', async () => {
        const d = await createDocument(t, owner.token, publicProjectId, { content: doc(paragraph('a', 'Alpha')) });
        expect((await content(d.id, reader.token)).status).toBe(200);
        const r = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'list' }] }, reader.token);
        expect([r.status, r.body.error]).toEqual([403, 'write_permission_required']);
        const hidden = await createDocument(t, owner.token, projectId);
        expect((await edit(hidden.id, { base_version: hidden.content_hash, mode: 'commands', commands: [{ op: 'list' }] }, stranger.token)).status).toBe(404);
      });

      it('refuses an agent token replacing the whole content of a document with comments (409), and lets it use commands', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'Alpha'), paragraph('n', '// keep me')) });
        const replace = await edit(d.id, { base_version: d.content_hash, mode: 'content', content: doc(paragraph('a', 'Agent wrote this')) }, owner.agentToken);
        expect([replace.status, replace.body.error]).toEqual([409, 'comment_preservation_required']);
        const commands = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'Agent wrote this' }] }, owner.agentToken);
        expect(commands.status).toBe(200);
        expect((await content(d.id)).body.content).toEqual(doc(paragraph('a', 'Agent wrote this'), paragraph('n', '// keep me')));
        // People (and API keys) may replace it.
        const byKey = await edit(d.id, { base_version: commands.body.version, mode: 'content', content: doc(paragraph('a', 'x')) }, owner.apiKey);
        expect(byKey.status).toBe(200);
      });

      it('lets exactly one of many parallel edits with the same base_version win; the rest get 409', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'start')) });
        const attempts = 12;
        const responses = await Promise.all(
          Array.from({ length: attempts }, (_, i) => edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: `writer ${i}` }] })),
        );
        const statuses = responses.map((r) => r.status).sort();
        expect(statuses.filter((s) => s === 200)).toHaveLength(1);
        expect(statuses.filter((s) => s === 409)).toHaveLength(attempts - 1);
        const winner = responses.find((r) => r.status === 200)!;
        const after = await content(d.id);
        expect(after.body.content_hash).toBe(winner.body.version);
        const versions = await t.request('GET', `/documents/${d.id}/versions?source=edit`, { token: owner.token });
        expect(versions.body.total).toBe(1);
      });
    });

    describe('delete', () => {
      it('soft-deletes, removes the node from the file tree, and answers 404 when repeated', async () => {
        const folder = await t.request('POST', `/project/${projectId}/folders`, { token: owner.token, body: { label: 'To clean' } });
        const d = await createDocument(t, owner.token, projectId, { parentKey: folder.body.key, title: 'Doomed' });
        const r = await t.request('DELETE', `/documents/${d.id}`, { token: owner.apiKey });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ success: true });
        expect((await content(d.id)).status).toBe(404);
        const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
        expect(tree.body.filesFolder.find((n: any) => n.key === folder.body.key).children).toEqual([]);
        const again = await t.request('DELETE', `/documents/${d.id}`, { token: owner.token });
        expect([again.status, again.body.error]).toEqual([404, 'document_not_found']);
      });

      it('needs write permission (403)', async () => {
        const d = await createDocument(t, owner.token, publicProjectId);
        const r = await t.request('DELETE', `/documents/${d.id}`, { token: reader.token });
        expect([r.status, r.body.error]).toEqual([403, 'write_permission_required']);
        expect((await t.request('DELETE', `/documents/${d.id}`, { token: stranger.agentToken })).status).toBe(403);
      });
    });

    describe('duplicate', () => {
      const duplicate = (pid: string, body: unknown, token = owner.token) => t.request('POST', `/documents/${pid}/duplicate`, { token, body });

      it('copies a document next to the original as [Copy], and a copy of a copy as [Copy-2]', async () => {
        const d = await createDocument(t, owner.token, projectId, { title: 'Plan', content: doc(paragraph('a', 'the plan')) });
        const first = await duplicate(projectId, { nodeKey: d.id, nodeType: 'file' });
        expect(first.status).toBe(200);
        expect(first.body).toEqual({ success: true, node: { key: expect.any(String), label: '[Copy] Plan', type: 'file', docType: 'document', isLeaf: true } });
        const copy = await content(first.body.node.key);
        expect(copy.body).toMatchObject({ title: '[Copy] Plan', content: doc(paragraph('a', 'the plan')), content_hash: d.content_hash });
        const second = await duplicate(projectId, { nodeKey: first.body.node.key, nodeType: 'file' });
        expect(second.body.node.label).toBe('[Copy-2] Plan');
        const third = await duplicate(projectId, { nodeKey: second.body.node.key, nodeType: 'file' });
        expect(third.body.node.label).toBe('[Copy-3] Plan');
        const tree = await t.request('GET', `/project/${projectId}`, { token: owner.token });
        const keys = tree.body.filesFolder.map((n: any) => n.key);
        expect(keys.indexOf(first.body.node.key)).toBe(keys.indexOf(d.id) + 1);
      });

      it('copies a folder with everything below it', async () => {
        const folder = await t.request('POST', `/project/${projectId}/folders`, { token: owner.token, body: { label: 'Chapter' } });
        const inner = await t.request('POST', `/project/${projectId}/folders`, { token: owner.token, body: { label: 'Section', parentKey: folder.body.key } });
        const a = await createDocument(t, owner.token, projectId, { title: 'A', parentKey: folder.body.key, content: doc(paragraph('a', 'in A')) });
        await createDocument(t, owner.token, projectId, { title: 'B', parentKey: inner.body.key, content: doc(paragraph('b', 'in B')) });
        const r = await duplicate(projectId, { nodeKey: folder.body.key, nodeType: 'folder' });
        expect(r.status).toBe(200);
        const node = r.body.node;
        expect(node).toMatchObject({ label: '[Copy] Chapter', type: 'folder', isLeaf: false });
        expect(node.children.map((c: any) => [c.label, c.type])).toEqual([
          ['Section', 'folder'],
          ['A', 'file'],
        ]);
        expect(node.children[0].children.map((c: any) => c.label)).toEqual(['B']);
        const copiedA = node.children[1].key;
        expect(copiedA).not.toBe(a.id);
        expect((await content(copiedA)).body.content).toEqual(doc(paragraph('a', 'in A')));
        expect((await content(node.children[0].children[0].key)).body.content).toEqual(doc(paragraph('b', 'in B')));
      });

      it('accepts a JWT only, of the project owner or a team member', async () => {
        const d = await createDocument(t, owner.token, projectId);
        for (const token of [owner.apiKey, owner.agentToken]) {
          const r = await duplicate(projectId, { nodeKey: d.id, nodeType: 'file' }, token);
          expect([r.status, r.body.error]).toEqual([403, 'credential_not_allowed']);
        }
        const outsider = await duplicate(projectId, { nodeKey: d.id, nodeType: 'file' }, stranger.token);
        expect([outsider.status, outsider.body.error]).toEqual([403, 'project_access_denied']);
        const pub = await createDocument(t, owner.token, publicProjectId);
        expect((await duplicate(publicProjectId, { nodeKey: pub.id, nodeType: 'file' }, reader.token)).status).toBe(403);
      });

      it('answers 400 without nodeKey or nodeType, and 404 for a missing project or node', async () => {
        const d = await createDocument(t, owner.token, projectId);
        expect((await duplicate(projectId, { nodeType: 'file' })).status).toBe(400);
        expect((await duplicate(projectId, { nodeKey: d.id })).status).toBe(400);
        expect((await duplicate(projectId, { nodeKey: d.id, nodeType: 'doc' })).status).toBe(400);
        const noProject = await duplicate('0190c1d2-0000-7000-8000-000000000000', { nodeKey: d.id, nodeType: 'file' });
        expect([noProject.status, noProject.body.error]).toEqual([404, 'project_not_found']);
        const noNode = await duplicate(projectId, { nodeKey: 'missing', nodeType: 'file' });
        expect([noNode.status, noNode.body.error]).toEqual([404, 'node_not_found']);
        const wrongType = await duplicate(projectId, { nodeKey: d.id, nodeType: 'folder' });
        expect([wrongType.status, wrongType.body.error]).toEqual([404, 'node_not_found']);
      });
    });

    describe('versions', () => {
      it('keeps a version per successful write with author and source; lists with paging and filters; reads; rolls back', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'v1')) });
        const e1 = await edit(d.id, { base_version: d.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'v2' }] });
        const e2 = await edit(d.id, { base_version: e1.body.version, mode: 'commands', commands: [{ op: 'write', blockId: 'a', content: 'v3' }] }, owner.agentToken);
        await edit(d.id, { base_version: e2.body.version, mode: 'commands', commands: [{ op: 'list' }] });
        const list = await t.request('GET', `/documents/${d.id}/versions?page=1&size=2`, { token: owner.token });
        expect(list.status).toBe(200);
        expect(list.body).toMatchObject({ total: 3, page: 1, size: 2 });
        expect(list.body.items).toHaveLength(2);
        expect(list.body.items[0]).toMatchObject({ version: e2.body.version, source: 'edit', author: { id: owner.userId }, author_kind: 'agent_token' });
        expect(list.body.items[0].content).toBeUndefined();
        const page2 = await t.request('GET', `/documents/${d.id}/versions?page=2&size=2`, { token: owner.token });
        expect(page2.body.items.map((v: any) => v.source)).toEqual(['create']);
        const created = page2.body.items[0];
        expect((await t.request('GET', `/documents/${d.id}/versions?source=create`, { token: owner.token })).body.total).toBe(1);
        expect((await t.request('GET', `/documents/${d.id}/versions?author_id=${stranger.userId}`, { token: owner.token })).body.total).toBe(0);
        expect((await t.request('GET', `/documents/${d.id}/versions?from=2999-01-01T00:00:00Z`, { token: owner.token })).body.total).toBe(0);
        expect((await t.request('GET', `/documents/${d.id}/versions?source=nope`, { token: owner.token })).status).toBe(400);
        const one = await t.request('GET', `/documents/${d.id}/versions/${created.id}`, { token: owner.token });
        expect(one.body).toMatchObject({ id: created.id, version: d.content_hash, content: doc(paragraph('a', 'v1')) });
        const rollback = await t.request('POST', `/documents/${d.id}/versions/${created.id}/rollback`, { token: owner.token });
        expect(rollback.status).toBe(200);
        expect(rollback.body).toMatchObject({ success: true, version: d.content_hash });
        expect((await content(d.id)).body.content).toEqual(doc(paragraph('a', 'v1')));
        const after = await t.request('GET', `/documents/${d.id}/versions`, { token: owner.token });
        expect(after.body.total).toBe(4);
        expect(after.body.items[0]).toMatchObject({ source: 'rollback', id: rollback.body.version_id });
        expect((await t.request('GET', `/documents/${d.id}/versions/0190c1d2-0000-7000-8000-000000000000`, { token: owner.token })).status).toBe(404);
        expect((await t.request('GET', `/documents/${d.id}/versions`, { token: stranger.token })).status).toBe(404);
        expect((await t.request('POST', `/documents/${d.id}/versions/${created.id}/rollback`, { token: reader.token })).status).toBe(404);
      });
    });

    it('answers 401 without credentials on every document route', async () => {
      const d = await createDocument(t, owner.token, projectId);
      const v = (await t.request('GET', `/documents/${d.id}/versions`, { token: owner.token })).body.items[0].id;
      const routes: Array<[string, string]> = [
        ['GET', `/documents/${d.id}/content`],
        ['POST', '/documents'],
        ['POST', `/documents/${d.id}/edit`],
        ['POST', `/documents/${d.id}/smart-edit`],
        ['DELETE', `/documents/${d.id}`],
        ['POST', `/documents/${projectId}/duplicate`],
        ['GET', `/documents/${d.id}/awareness`],
        ['GET', `/documents/${d.id}/yjs-state`],
        ['PUT', `/documents/${d.id}/yjs-state`],
        ['GET', `/documents/${d.id}/versions`],
        ['GET', `/documents/${d.id}/versions/${v}`],
        ['POST', `/documents/${d.id}/versions/${v}/rollback`],
        ['POST', `/documents/${d.id}/ui-annotations`],
        ['POST', `/documents/${d.id}/ui-pending-changes`],
        ['POST', `/documents/${d.id}/ui-preview-state`],
        ['POST', `/documents/${d.id}/ui-save`],
        ['PATCH', `/documents/${d.id}/ui-thumbnail`],
        ['GET', `/documents/${d.id}/ui-state`],
        ['POST', `/documents/${d.id}/collab/join`],
        ['POST', `/documents/${d.id}/collab/leave`],
        ['POST', `/documents/${d.id}/collab/edit`],
      ];
      for (const [method, path] of routes) {
        const r = await t.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
        expect([method, path, r.status, r.body.error]).toEqual([method, path, 401, 'missing_credentials']);
      }
      expect((await content(d.id)).body.content_hash).toBe(d.content_hash);
    });

    describe('UI preview', () => {
      it('stores annotations, pending changes, preview state and thumbnail, and saves editor output', async () => {
        const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'ui')) });
        const base = `/documents/${d.id}`;
        const ann = await t.request('POST', `${base}/ui-annotations`, { token: owner.token, body: { annotations: [{ id: 'n1', target: 'button', note: 'bigger' }] } });
        expect(ann.status).toBe(200);
        expect(ann.body.ui_state.annotations).toEqual([{ id: 'n1', target: 'button', note: 'bigger' }]);
        const pending = await t.request('POST', `${base}/ui-pending-changes`, { token: owner.agentToken, body: { changes: [{ op: 'recolor', to: 'red' }], summary: 'red button' } });
        expect(pending.body.ui_state.pending_changes).toMatchObject({ changes: [{ op: 'recolor', to: 'red' }], summary: 'red button', submitted_by: owner.userId });
        // Without a summary the stored changes carry summary null, which the published schema admits (the conformance check validates it).
        const unsummarised = await t.request('POST', `${base}/ui-pending-changes`, { token: owner.token, body: { changes: [{ op: 'resize' }] } });
        expect([unsummarised.status, unsummarised.body.ui_state.pending_changes]).toMatchObject([200, { changes: [{ op: 'resize' }], summary: null, submitted_by: owner.userId }]);
        await t.request('POST', `${base}/ui-preview-state`, { token: owner.token, body: { screen: 'home', viewport: { width: 390, height: 844 } } });
        const preview = await t.request('POST', `${base}/ui-preview-state`, { token: owner.token, body: { render_state: { tab: 2 } } });
        expect(preview.body.ui_state.preview_state).toEqual({ screen: 'home', viewport: { width: 390, height: 844 }, render_state: { tab: 2 } });
        await t.request('PATCH', `${base}/ui-thumbnail`, { token: owner.token, body: { url: 'https://cdn.example/t.png', width: 320 } });
        const thumb = await t.request('PATCH', `${base}/ui-thumbnail`, { token: owner.token, body: { height: 200 } });
        expect(thumb.body).toEqual({ success: true, thumbnail: { url: 'https://cdn.example/t.png', width: 320, height: 200 } });
        const save = await t.request('POST', `${base}/ui-save`, { token: owner.token, body: { content: doc(paragraph('a', 'saved from the UI')), base_version: d.content_hash } });
        expect(save.status).toBe(200);
        expect((await content(d.id)).body).toMatchObject({ content: doc(paragraph('a', 'saved from the UI')), content_hash: save.body.version });
        const state = await t.request('GET', `${base}/ui-state`, { token: owner.apiKey });
        expect(state.body).toMatchObject({ annotations: [{ id: 'n1' }], pending_changes: null, thumbnail: { height: 200 }, preview_state: { screen: 'home' } });
        const versions = await t.request('GET', `${base}/versions?source=ui_save`, { token: owner.token });
        expect(versions.body.total).toBe(1);
        const stale = await t.request('POST', `${base}/ui-save`, { token: owner.token, body: { content: doc(paragraph('a', 'x')), base_version: d.content_hash } });
        expect([stale.status, stale.body.error]).toEqual([409, 'version_conflict']);
      });

      it('keeps parallel updates of different UI fields', async () => {
        const d = await createDocument(t, owner.token, projectId);
        const base = `/documents/${d.id}`;
        await Promise.all([
          t.request('PATCH', `${base}/ui-thumbnail`, { token: owner.token, body: { url: 'https://a.example/x.png' } }),
          t.request('PATCH', `${base}/ui-thumbnail`, { token: owner.token, body: { width: 10 } }),
          t.request('POST', `${base}/ui-preview-state`, { token: owner.token, body: { screen: 's' } }),
          t.request('POST', `${base}/ui-annotations`, { token: owner.token, body: { annotations: [{ id: 1 }] } }),
        ]);
        const state = await t.request('GET', `${base}/ui-state`, { token: owner.token });
        expect(state.body).toMatchObject({ thumbnail: { url: 'https://a.example/x.png', width: 10 }, preview_state: { screen: 's' }, annotations: [{ id: 1 }] });
      });

      it('refuses bad bodies (400), readers (403) and outsiders (404)', async () => {
        const d = await createDocument(t, owner.token, publicProjectId);
        const base = `/documents/${d.id}`;
        expect((await t.request('POST', `${base}/ui-annotations`, { token: owner.token, body: { annotations: 'x' } })).status).toBe(400);
        expect((await t.request('PATCH', `${base}/ui-thumbnail`, { token: owner.token, body: { width: 'wide' } })).status).toBe(400);
        expect((await t.request('POST', `${base}/ui-save`, { token: owner.token, body: {} })).status).toBe(400);
        expect((await t.request('POST', `${base}/ui-annotations`, { token: reader.token, body: { annotations: [] } })).status).toBe(403);
        // Every signed-in user may read a public project's documents, but not change them.
        expect((await t.request('POST', `${base}/ui-preview-state`, { token: stranger.token, body: {} })).status).toBe(403);
        const hidden = await createDocument(t, owner.token, projectId);
        expect((await t.request('POST', `/documents/${hidden.id}/ui-preview-state`, { token: stranger.token, body: {} })).status).toBe(404);
        expect((await t.request('GET', `/documents/${hidden.id}/ui-state`, { token: stranger.token })).status).toBe(404);
      });
    });
  });
});
