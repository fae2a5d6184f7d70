import type { MikroORM } from '@mikro-orm/core';
import { canonicalJson, contentHash, ormServiceIdentifier } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

// Versions are stored as snapshots or as block deltas on the version before them; whatever the
// storage, every version reads back byte for byte (canonical JSON) as it was written, on both
// databases. One transport: storage does not depend on it (documents.int.spec.ts covers both).
describe.each(testDatabases())('document versions on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  let projectId: string;

  beforeAll(async () => {
    t = await startTestHost(db, 'uws');
    owner = await actor(t);
    projectId = (await createProject(t, owner.token)).id;
  });
  afterAll(() => t?.close());

  const orm = () => t.kernel.container.get(ormServiceIdentifier) as MikroORM;
  const sql = (query: string, params: unknown[] = []) => orm().em.getConnection().execute(query, params) as Promise<Array<Record<string, unknown>>>;
  const edit = async (id: string, base: string, commands: unknown[]) => {
    const r = await t.request('POST', `/documents/${id}/edit`, { token: owner.token, body: { base_version: base, mode: 'commands', commands } });
    expect(r.status, r.text).toBe(200);
    return r.body.version as string;
  };
  const current = async (id: string) => (await t.request('GET', `/documents/${id}/content`, { token: owner.token })).body;
  const versions = async (id: string) => (await t.request('GET', `/documents/${id}/versions?size=100`, { token: owner.token })).body.items as Array<{ id: string; version: string; source: string }>;
  const readVersion = async (id: string, versionId: string) => {
    const r = await t.request('GET', `/documents/${id}/versions/${versionId}`, { token: owner.token });
    expect(r.status, r.text).toBe(200);
    return r.body;
  };
  const storage = async (versionId: string) => (await sql('select content, delta, base_id, chain_length from document_versions where id = ?', [versionId]))[0]!;
  const isSnapshot = (row: Record<string, unknown>) => row.delta === null && row.content !== null && row.content !== 'null';

  /** Every version of `id` read back equals, byte for byte as canonical JSON, what `written` recorded. */
  async function expectExactHistory(id: string, written: Map<string, string>) {
    const items = await versions(id);
    expect(items.length).toBe(written.size);
    for (const item of items) {
      const body = await readVersion(id, item.id);
      expect(canonicalJson(body.content)).toBe(written.get(item.id));
      expect(contentHash(body.content)).toBe(item.version);
    }
  }

  it('stores edits as small deltas and reads every version back exactly, after many edits of every kind', async () => {
    const blocks = Array.from({ length: 40 }, (_, i) => paragraph(`b${i}`, `block ${i} `.repeat(20) + `mark-${i}`));
    const d = await createDocument(t, owner.token, projectId, { content: doc(...blocks) });
    const written = new Map<string, string>();
    const record = async () => {
      const latest = (await versions(d.id))[0]!;
      written.set(latest.id, canonicalJson((await current(d.id)).content));
      return latest.id;
    };
    const created = await record();
    let v = d.content_hash;
    v = await edit(d.id, v, [{ op: 'str_replace', blockId: 'b7', old_str: 'mark-7', new_str: 'MARK-7 ✓ 😀' }]);
    const afterReplace = await record();
    v = await edit(d.id, v, [{ op: 'insert', after: 'b3', block: { type: 'heading', attrs: { id: 'h1', level: 2 }, content: [{ type: 'text', text: 'new', marks: [{ type: 'bold' }] }] } }]);
    await record();
    v = await edit(d.id, v, [{ op: 'delete', blockId: 'b0' }]);
    await record();
    v = await edit(d.id, v, [{ op: 'delete', blockId: 'b39' }]);
    await record();
    v = await edit(d.id, v, [{ op: 'move', blockId: 'b10', after: 'b30' }]);
    await record();
    v = await edit(d.id, v, [{ op: 'write', blockId: 'b20', content: [{ type: 'text', text: 'rewritten', marks: [{ type: 'italic' }] }] }, { op: 'str_replace', blockId: 'b21', old_str: 'mark-21', new_str: '' }]);
    await record();
    v = await edit(d.id, v, [{ op: 'replace', blockId: 'b25', block: { type: 'codeBlock', attrs: { language: 'ts' }, content: [{ type: 'text', text: 'let x = "\\u0001";' }] } }]);
    await record();
    // A title change alone is no new version; a whole-content replacement through POST /documents is.
    const renamed = await t.request('POST', '/documents', { token: owner.token, body: { documentId: d.id, title: 'Renamed' } });
    expect(renamed.status).toBe(200);
    const replaced = await t.request('POST', '/documents', { token: owner.token, body: { documentId: d.id, content: doc(...(await current(d.id)).content.content.slice(0, 30), paragraph('tail', 'new tail')) } });
    expect(replaced.status, replaced.text).toBe(200);
    v = replaced.body.content_hash;
    await record();

    // Edits of a few blocks are stored as deltas (not the whole content again); the first is a snapshot.
    expect(isSnapshot(await storage(created))).toBe(true);
    const delta = await storage(afterReplace);
    expect(isSnapshot(delta)).toBe(false);
    expect(delta.base_id).toBe(created);
    expect(Number(delta.chain_length)).toBe(1);
    expect(String(delta.delta).length).toBeLessThan(1000);
    await expectExactHistory(d.id, written);

    // Rolling back to an old (delta) version restores its content exactly; the rollback is a version too.
    const rollback = await t.request('POST', `/documents/${d.id}/versions/${afterReplace}/rollback`, { token: owner.token });
    expect(rollback.status, rollback.text).toBe(200);
    expect(canonicalJson((await current(d.id)).content)).toBe(written.get(afterReplace));
    written.set(rollback.body.version_id, written.get(afterReplace)!);
    await edit(d.id, rollback.body.version, [{ op: 'str_replace', blockId: 'b8', old_str: 'mark-8', new_str: 'after rollback' }]);
    await record();
    await expectExactHistory(d.id, written);
    expect(v).not.toBe(rollback.body.version);
  });

  it('starts a new snapshot when a delta chain is long, and after a document written without a head version', async () => {
    const fixed = Array.from({ length: 12 }, (_, i) => paragraph(`f${i}`, `fixed block ${i} `.repeat(4)));
    const body = (n: number, last = 'fixed') => doc(paragraph('a', `count ${n}`), ...fixed, paragraph('b', last));
    const d = await createDocument(t, owner.token, projectId, { content: body(0) });
    // Contents by version hash (every count gives another hash).
    const byHash = new Map<string, string>([[d.content_hash, canonicalJson(body(0))]]);
    let v = d.content_hash;
    for (let i = 0; i < 66; i++) {
      v = await edit(d.id, v, [{ op: 'str_replace', blockId: 'a', old_str: `count ${i}`, new_str: `count ${i + 1}` }]);
      byHash.set(v, canonicalJson(body(i + 1)));
    }
    const rows = await sql('select chain_length from document_versions where document_id = ?', [d.id]);
    const chains = rows.map((row) => Number(row.chain_length));
    // The 65th edit (chain 64) is the last delta of the chain; the next write is a snapshot again.
    expect(Math.max(...chains)).toBe(64);
    expect(chains.filter((n) => n === 0)).toHaveLength(2);

    // A row as the release before deltas left it (no head version): the next version is a snapshot.
    await sql('update documents set head_version_id = null where id = ?', [d.id]);
    v = await edit(d.id, v, [{ op: 'str_replace', blockId: 'b', old_str: 'fixed', new_str: 'changed' }]);
    byHash.set(v, canonicalJson(body(66, 'changed')));
    const items = await versions(d.id);
    expect(isSnapshot(await storage(items[0]!.id))).toBe(true);
    expect(items).toHaveLength(68);
    await expectExactHistory(d.id, new Map(items.map((item) => [item.id, byHash.get(item.version)!])));
    expect((await current(d.id)).content_hash).toBe(v);
  });
  it('edits a large document from what is stored, even after another process wrote it since this one cached it', async () => {
    // Over 64 KiB: this process keeps the content it writes for the next edit.
    const blocks = Array.from({ length: 80 }, (_, i) => paragraph(`p${i}`, `paragraph ${i} `.repeat(80) + `end-${i}`));
    const d = await createDocument(t, owner.token, projectId, { content: doc(...blocks) });
    const createdVersion = (await versions(d.id))[0]!.id;
    const v1 = await edit(d.id, d.content_hash, [{ op: 'str_replace', blockId: 'p1', old_str: 'end-1', new_str: 'first edit' }]);
    const v2 = await edit(d.id, v1, [{ op: 'str_replace', blockId: 'p2', old_str: 'end-2', new_str: 'second edit' }]);
    expect(JSON.stringify((await current(d.id)).content)).toContain('first edit');
    // Another process puts the created content back (a write of its own: its own head version).
    await sql('update documents set content = ?, content_hash = ?, head_version_id = ? where id = ?', [canonicalJson(doc(...blocks)), d.content_hash, createdVersion, d.id]);
    const v3 = await edit(d.id, d.content_hash, [{ op: 'str_replace', blockId: 'p3', old_str: 'end-3', new_str: 'third edit' }]);
    const expected = doc(...blocks.map((b, i) => (i === 3 ? paragraph('p3', `paragraph 3 `.repeat(80) + 'third edit') : b)));
    expect(canonicalJson((await current(d.id)).content)).toBe(canonicalJson(expected));
    expect(v3).toBe(contentHash(expected));
    const latest = (await versions(d.id))[0]!;
    expect(latest.version).toBe(v3);
    expect(canonicalJson((await readVersion(d.id, latest.id)).content)).toBe(canonicalJson(expected));
    // Stale base versions still answer 409, and the cached content never leaks into a later edit.
    const stale = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: v2, mode: 'commands', commands: [{ op: 'list' }] } });
    expect(stale.status).toBe(409);
    const v4 = await edit(d.id, v3, [{ op: 'str_replace', blockId: 'p4', old_str: 'end-4', new_str: 'fourth edit' }]);
    const text = JSON.stringify((await current(d.id)).content);
    expect(text).toContain('third edit');
    expect(text).toContain('fourth edit');
    expect(text).not.toContain('first edit');
    expect((await current(d.id)).content_hash).toBe(v4);
  });
  it('keeps the hashes of content stored before the json migration valid (PostgreSQL: jsonb to json), and edits on from them', async () => {
    const blocks = Array.from({ length: 6 }, (_, i) => paragraph(`j${i}`, `stored as jsonb ${i} `.repeat(12)));
    const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'one'), ...blocks) });
    const before = await t.kernel.migrate.status();
    const mine = before.executed.findIndex((name) => name.endsWith('_documents_content_json'));
    expect(mine).toBeGreaterThanOrEqual(0);
    await t.kernel.migrate.down({ steps: before.executed.length - mine });
    const postgres = db.name !== 'sqlite';
    const columnTypes = async () =>
      (await sql("select table_name, data_type from information_schema.columns where table_name in ('documents', 'document_versions') and column_name = 'content' order by table_name")).map((row) => row.data_type);
    if (postgres) expect(await columnTypes()).toEqual(['jsonb', 'jsonb']);
    // Written as the release before made it: jsonb keeps its own key order and spacing, not the canonical text.
    const old = doc(paragraph('a', 'two'), ...blocks);
    await sql('update documents set content = ?, content_hash = ? where id = ?', [JSON.stringify(old), contentHash(old), d.id]);
    expect(await t.kernel.migrate.up()).toEqual(before.executed.slice(mine));
    if (postgres) expect(await columnTypes()).toEqual(['json', 'json']);

    const read = await current(d.id);
    expect(read.content_hash).toBe(contentHash(old));
    expect(contentHash(read.content)).toBe(read.content_hash);
    expect(canonicalJson(read.content)).toBe(canonicalJson(old));
    // The stored hash is still the version clients send back as base_version.
    const v = await edit(d.id, contentHash(old), [{ op: 'str_replace', blockId: 'a', old_str: 'two', new_str: 'three' }]);
    const after = await current(d.id);
    expect(after.content_hash).toBe(v);
    expect(contentHash(after.content)).toBe(v);
    const stale = await t.request('POST', `/documents/${d.id}/edit`, { token: owner.token, body: { base_version: contentHash(old), mode: 'commands', commands: [{ op: 'str_replace', blockId: 'a', old_str: 'three', new_str: 'four' }] } });
    expect(stale.status).toBe(409);
  });

  // Last: it takes the schema back to before deltas and up again.
  it('keeps documents and versions written before deltas readable after the migration, and goes on with deltas', async () => {
    const d = await createDocument(t, owner.token, projectId, { content: doc(paragraph('a', 'one'), ...Array.from({ length: 8 }, (_, i) => paragraph(`k${i}`, `kept ${i} `.repeat(10)))) });
    const before = await t.kernel.migrate.status();
    const mine = before.executed.findIndex((name) => name.endsWith('_documents_version_deltas'));
    expect(mine).toBeGreaterThanOrEqual(0);
    await t.kernel.migrate.down({ steps: before.executed.length - mine });
    const columns = await sql('select * from document_versions where document_id = ?', [d.id]);
    expect(Object.keys(columns[0]!)).not.toContain('delta');
    // A write as the release before deltas made it: content, hash and a snapshot version.
    const old = doc(paragraph('a', 'two'), ...Array.from({ length: 8 }, (_, i) => paragraph(`k${i}`, `kept ${i} `.repeat(10))));
    const platform = orm().em.getPlatform();
    await sql('update documents set content = ?, content_hash = ? where id = ?', [canonicalJson(old), contentHash(old), d.id]);
    await sql('insert into document_versions (id, document_id, content_hash, content, title, source, author_id, author_kind, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
      '0190c1d2-0000-7000-8000-00000000aaaa',
      d.id,
      contentHash(old),
      canonicalJson(old),
      'Untitled',
      'edit',
      owner.userId,
      'jwt',
      platform.processDateProperty(new Date()),
    ]);
    expect(await t.kernel.migrate.up()).toEqual(before.executed.slice(mine));

    const written = new Map<string, string>([
      [(await versions(d.id)).find((v) => v.source === 'create')!.id, canonicalJson(d.content)],
      ['0190c1d2-0000-7000-8000-00000000aaaa', canonicalJson(old)],
    ]);
    await expectExactHistory(d.id, written);
    // The first write after the migration is a snapshot (no head version yet), the next a delta.
    let v = contentHash(old);
    for (const [from, to] of [['two', 'three'], ['three', 'four']] as const) {
      v = await edit(d.id, v, [{ op: 'str_replace', blockId: 'a', old_str: from, new_str: to }]);
      const latest = (await versions(d.id))[0]!;
      written.set(latest.id, canonicalJson((await current(d.id)).content));
    }
    const items = await versions(d.id);
    expect(isSnapshot(await storage(items[1]!.id))).toBe(true);
    expect(isSnapshot(await storage(items[0]!.id))).toBe(false);
    await expectExactHistory(d.id, written);
    expect((await current(d.id)).content_hash).toBe(v);
  });
});
