import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coreModules } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { uppercaseModule } from '../../examples/block-kind-uppercase/uppercase.js';

/**
 * The example block kind of docs/runs.md ("Writing a block kind"), registered by its own module
 * next to the built-in ones: a workflow using it runs over HTTP, its attrs are validated by its
 * schema, its errors reach the run, and it streams. Every response is checked against /openapi.json.
 */
describe.each(testDatabases())('a block kind added by a package on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let token: string;
    let projectId: string;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { modules: [...coreModules, uppercaseModule] });
      token = (await t.register()).token;
      const project = await t.request('POST', '/project', { token, body: { name: `Uppercase ${Date.now()}`, tools: [], access: 'team' } });
      expect(project.status).toBe(201);
      projectId = project.body.id;
    });
    afterAll(() => t?.close());

    const uppercase = (attrs: Record<string, unknown>, text: string) => ({ type: 'uppercaseBlock', attrs: { id: 'u1', name: 'loud', ...attrs }, content: text ? [{ type: 'text', text }] : [] });
    const workflow = (...blocks: unknown[]) => ({
      type: 'doc',
      content: [
        { type: 'inputBlock', attrs: { id: 'in', name: 'topic', type: 'string', required: true } },
        ...blocks,
        { type: 'outputBlock', attrs: { id: 'out', name: 'result' }, content: [{ type: 'text', text: '{{ loud }}' }] },
      ],
    });
    const documentOf = async (content: unknown) => {
      const created = await t.request('POST', '/documents', { token, body: { projectId, title: 'Shout', content } });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const run = (documentId: string, body: Record<string, unknown>) => t.request('POST', `/documents/${documentId}/run`, { token, body: { stream: false, ...body } });

    it('runs a workflow with the kind and answers its typed output', async () => {
      const documentId = await documentOf(workflow(uppercase({ exclaim: 2 }, 'hello {{ topic }}')));
      const r = await run(documentId, { inputs: { topic: 'gardens' } });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('completed');
      expect(r.body.sessions.map((s: { blockType: string; status: string; output: unknown }) => [s.blockType, s.status, s.output])).toEqual([
        ['inputBlock', 'completed', 'gardens'],
        ['uppercaseBlock', 'completed', 'HELLO GARDENS!!'],
        ['outputBlock', 'completed', 'HELLO GARDENS!!'],
      ]);
      // The case mapping follows the block's locale attr.
      const turkish = await run(await documentOf(workflow(uppercase({ locale: 'tr' }, 'istanbul {{ topic }}'))), { inputs: { topic: 'i' } });
      expect(turkish.body.sessions[1].output).toBe('İSTANBUL İ');
    });

    it('streams the kind\'s chunks between block_start and block_complete', async () => {
      const documentId = await documentOf(workflow(uppercase({}, 'one two three')));
      // A stream is read raw (the contract check covers its status and content type).
      const r = await fetch(`${t.url}/documents/${documentId}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ format: 'ndjson', inputs: { topic: 'x' } }),
      });
      expect(r.status).toBe(200);
      const text = await r.text();
      await t.contract.check('POST', `/documents/${documentId}/run`, r.status, r.headers.get('content-type'), text);
      const events = text.trim().split('\n').map((line) => JSON.parse(line) as { type: string; blockId?: string; delta?: string });
      expect(events.map((e) => e.type).filter((type) => type !== 'block_chunk').slice(4, 6)).toEqual(['block_start', 'block_complete']);
      const chunks = events.filter((e) => e.type === 'block_chunk');
      expect(chunks.map((c) => c.delta)).toEqual(['ONE ', 'TWO ', 'THREE']);
      expect(chunks.every((c) => c.blockId === 'u1')).toBe(true);
      expect(events.at(-1)!.type).toBe('run_complete');
    });

    it('refuses attrs its schema does not allow with 400 invalid_workflow naming the block and field', async () => {
      const documentId = await documentOf(workflow(uppercase({ exclaim: 9, locale: 7 }, '')));
      const r = await run(documentId, { inputs: { topic: 'x' } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_workflow');
      expect(r.body.details).toEqual([
        { field: 'content.1.attrs.exclaim', constraint: 'isIn', message: 'must be a whole number from 0 to 5' },
        { field: 'content.1.attrs.locale', constraint: 'isString', message: 'must be a string' },
        { field: 'content.1.attrs.text', constraint: 'required', message: 'an uppercase block needs text (its content)' },
      ]);
    });

    it('fails the block with the kind\'s own error code', async () => {
      const documentId = await documentOf(workflow(uppercase({ locale: 'not a language tag' }, 'hey')));
      const r = await run(documentId, { inputs: { topic: 'x' } });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('failed');
      expect(r.body.sessions[1]).toMatchObject({ blockType: 'uppercaseBlock', status: 'failed' });
      expect(JSON.stringify(r.body)).toContain('invalid_locale');
    });
  });
});
