import { HashingEmbedder, matchesVdbFilter, parseVdbFilter } from '@trellis/core';
import type { TestHost } from '@trellis/test-support';
import { expect, it } from 'vitest';

/** Cosine distance between two texts as the default embedder sees them (the test's own brute force). */
const embedder = new HashingEmbedder();
const distance = (a: string, b: string): number => {
  const x = embedder.embedOne(a);
  const y = embedder.embedOne(b);
  let dot = 0;
  let nx = 0;
  let ny = 0;
  for (let i = 0; i < x.length; i++) {
    dot += x[i]! * y[i]!;
    nx += x[i]! * x[i]!;
    ny += y[i]! * y[i]!;
  }
  return nx && ny ? 1 - dot / Math.sqrt(nx * ny) : 1;
};

const words = ['password', 'reset', 'billing', 'invoice', 'refund', 'login', 'account', 'delete', 'export', 'import', 'team', 'invite', 'plan', 'upgrade', '发票', '退款', '登录', '密码'];

/** A deterministic pseudo-random record set with varied tags and metadata. */
export function recordSet(count: number, seed = 7): Array<{ content: string; tags: Array<string | number | boolean>; metadata: Record<string, unknown> }> {
  let state = seed;
  const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const content = `${pick(words)} ${pick(words)} ${pick(words)} question ${i}`;
    const tags: Array<string | number | boolean> = [pick(['faq', 'guide', 'note']), ...(i % 10 === 3 ? ['rare'] : []), ...(next() < 0.3 ? [2024] : []), ...(i % 7 === 2 ? ['引号 "q" \\ é'] : [])];
    const metadata: Record<string, unknown> = { year: 2015 + Math.floor(next() * 10), lang: pick(['en', 'zh', 'fr']), score: Math.round(next() * 1000) / 10, draft: next() < 0.5, index: i };
    if (next() < 0.3) metadata['author'] = { name: pick(['ann', 'bo', 'cy']) };
    if (next() < 0.4) metadata['labels'] = [pick(['a', 'b', 'c']), pick(['b', 'd'])];
    if (next() < 0.2) metadata['year'] = String(metadata['year']);
    if (next() < 0.1) metadata['lang'] = null;
    return { content, tags, metadata };
  });
}

/** Filters that exercise every operator, with the in-memory reference semantics as the oracle. */
export const filterCases: unknown[] = [
  { tags: 'faq' },
  { tags: { $contains: 'rare' } },
  { tags: 2024 },
  { tags: { $in: ['guide', 'note'] } },
  { tags: { $nin: ['faq', 'rare'] } },
  { tags: { $all: ['faq', 2024] } },
  { tags: '引号 "q" \\ é' },
  { tags: { $nin: ['引号 "q" \\ é'] } },
  { 'metadata.lang': 'zh' },
  { 'metadata.lang': null },
  { 'metadata.lang': { $ne: 'en' } },
  { 'metadata.year': 2020 },
  { 'metadata.year': '2020' },
  { 'metadata.year': { $gte: 2018, $lt: 2022 } },
  { 'metadata.year': { $gt: '2019' } },
  { 'metadata.score': { $lte: 50.5 } },
  { 'metadata.draft': true },
  { 'metadata.draft': { $ne: false } },
  { 'metadata.lang': { $in: ['en', 'fr'] } },
  { 'metadata.lang': { $nin: ['en', 'fr'] } },
  { 'metadata.labels': { $contains: 'b' } },
  { 'metadata.author.name': 'bo' },
  { 'metadata.author': { $exists: true } },
  { 'metadata.author': { $exists: false } },
  { $or: [{ 'metadata.lang': 'zh' }, { tags: 'rare' }] },
  { $and: [{ tags: 'faq' }, { 'metadata.year': { $gte: 2020 } }], 'metadata.draft': false },
  { $not: { 'metadata.lang': 'en' } },
  { $or: [{ 'metadata.author.name': { $in: ['ann', 'cy'] } }, { $and: [{ 'metadata.score': { $gt: 90 } }, { tags: { $nin: ['note'] } }] }] },
];

/** The vector database contract, shared by the default stores and the pgvector adapter. */
export function vdbContract(host: () => TestHost, login: () => Promise<{ token: string }>): void {
  const className = (name: string) => `${name}_${Math.random().toString(36).slice(2, 8)}`;

  it('creates a collection on the first write, then reads, updates, lists and deletes records', async () => {
    const t = host();
    const { token } = await login();
    const name = className('Faq');
    const missing = await t.request('GET', `/tool/vdb/${name}`, { token });
    expect([missing.status, missing.body.error]).toEqual([404, 'vdb_collection_not_found']);
    const created = await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'How do I reset my password?', tags: ['faq', 1], metadata: { lang: 'en', n: { x: 1 } } } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ className: name, content: 'How do I reset my password?', tags: ['faq', 1], metadata: { lang: 'en', n: { x: 1 } } });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const id = created.body.id as string;
    expect((await t.request('GET', `/tool/vdb/${name}/${id}`, { token })).body).toEqual(created.body);

    const patched = await t.request('PATCH', `/tool/vdb/${name}/${id}`, { token, body: { tags: ['faq', 'account'] } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ content: 'How do I reset my password?', tags: ['faq', 'account'], metadata: { lang: 'en', n: { x: 1 } } });
    const recontent = await t.request('PATCH', `/tool/vdb/${name}/${id}`, { token, body: { content: 'Refund an invoice', metadata: { lang: 'zh' } } });
    expect(recontent.body).toMatchObject({ content: 'Refund an invoice', tags: ['faq', 'account'], metadata: { lang: 'zh' } });
    // The new content is what the search sees.
    const found = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'Refund an invoice' } });
    expect(found.body.items[0]).toMatchObject({ id, content: 'Refund an invoice' });
    expect(found.body.items[0].score).toBeCloseTo(1, 5);

    const second = await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'second' } });
    expect(second.body).toMatchObject({ tags: [], metadata: {} });
    const list = await t.request('GET', `/tool/vdb/${name}?limit=1&skip=1`, { token });
    expect(list.body).toMatchObject({ total: 2, page: 2, size: 1, skip: 1, limit: 1 });
    expect(list.body.items.map((r: { id: string }) => r.id)).toEqual([second.body.id]);

    const deleted = await t.request('DELETE', `/tool/vdb/${name}/${id}`, { token });
    expect([deleted.status, deleted.body]).toEqual([200, { id, deleted: true }]);
    for (const [method, body] of [['GET'], ['PATCH', { tags: [] }], ['DELETE']] as const) {
      const again = await t.request(method, `/tool/vdb/${name}/${id}`, { token, body });
      expect([again.status, again.body.error]).toEqual([404, 'vdb_record_not_found']);
    }
    const afterDelete = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'Refund an invoice' } });
    expect(afterDelete.body.items.map((r: { id: string }) => r.id)).toEqual([second.body.id]);
    expect((await t.request('GET', `/tool/vdb/${name}/not-a-uuid`, { token })).status).toBe(404);
  });

  it('keeps collections per team: another user sees none of them', async () => {
    const t = host();
    const [a, b] = [await login(), await login()];
    const name = className('Private');
    const created = await t.request('POST', `/tool/vdb/${name}`, { token: a.token, body: { content: 'mine' } });
    expect((await t.request('GET', `/tool/vdb/${name}`, { token: b.token })).status).toBe(404);
    expect((await t.request('GET', `/tool/vdb/${name}/${created.body.id}`, { token: b.token })).status).toBe(404);
    expect((await t.request('DELETE', `/tool/vdb/${name}/${created.body.id}`, { token: b.token })).status).toBe(404);
    expect((await t.request('GET', `/tool/vdb/${name}/${created.body.id}`, { token: a.token })).status).toBe(200);
    expect((await t.request('GET', `/tool/vdb/${name}`)).status).toBe(401);
  });

  it('filters lists and searches exactly as the documented semantics say, on every operator', async () => {
    const t = host();
    const { token } = await login();
    const name = className('Filters');
    const records = recordSet(60, 11);
    const ids: string[] = [];
    for (const record of records) ids.push((await t.request('POST', `/tool/vdb/${name}`, { token, body: record })).body.id);
    for (const filter of filterCases) {
      const expected = records.flatMap((record, i) => (matchesVdbFilter(parseVdbFilter(filter)!, record) ? [ids[i]] : []));
      const listed = await t.request('GET', `/tool/vdb/${name}?limit=100&where=${encodeURIComponent(JSON.stringify(filter))}`, { token });
      expect(listed.status, JSON.stringify(filter)).toBe(200);
      expect(listed.body.items.map((r: { id: string }) => r.id), JSON.stringify(filter)).toEqual(expected);
      expect(listed.body.total).toBe(expected.length);
      const searched = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'reset password', query: { filter, limit: 100 } } });
      expect(searched.status, JSON.stringify(filter) + searched.text).toBe(200);
      expect(searched.body.items.map((r: { id: string }) => r.id).sort(), JSON.stringify(filter)).toEqual([...expected].sort());
    }
  });

  it('answers exactly `limit` nearest hits among the records that match the filter, ranked as a brute force ranks them', async () => {
    const t = host();
    const { token } = await login();
    const name = className('Knn');
    const records = recordSet(120, 3);
    const ids: string[] = [];
    for (const record of records) ids.push((await t.request('POST', `/tool/vdb/${name}`, { token, body: record })).body.id);
    const query = 'refund invoice billing';
    const rare = records.flatMap((record, i) => (record.tags.includes('rare') ? [i] : []));
    expect(rare.length).toBe(12);

    const filtered = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: query, query: { filter: { tags: 'rare' }, limit: 10 } } });
    expect(filtered.status).toBe(200);
    expect(filtered.body.items).toHaveLength(10);
    expect(filtered.body).toMatchObject({ total: 10, page: 1, size: 10 });
    const brute = rare.map((i) => ({ id: ids[i]!, d: distance(query, records[i]!.content) })).sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
    expect(filtered.body.items.map((r: { distance: number }) => r.distance)).toEqual(brute.slice(0, 10).map((b) => expect.closeTo(b.d, 5)));
    for (const item of filtered.body.items) {
      expect(item.tags).toContain('rare');
      expect(item.score).toBeCloseTo(1 - item.distance, 10);
    }
    const all = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: query, query: { filter: { tags: 'rare' }, limit: 50 } } });
    expect(all.body.items).toHaveLength(12);

    const unfiltered = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: query, query: { limit: 5 } } });
    const bruteAll = records.map((record, i) => ({ id: ids[i]!, d: distance(query, record.content) })).sort((a, b) => a.d - b.d || (a.id < b.id ? -1 : 1));
    expect(unfiltered.body.items.map((r: { distance: number }) => r.distance)).toEqual(bruteAll.slice(0, 5).map((b) => expect.closeTo(b.d, 5)));
    const byDefault = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: query } });
    expect(byDefault.body.items).toHaveLength(10);
  });

  it('answers 400 for invalid filters and queries, 422 for bad values, 404 for unknown collections', async () => {
    const t = host();
    const { token } = await login();
    const name = className('Errors');
    await t.request('POST', `/tool/vdb/${name}`, { token, body: { content: 'x', metadata: { a: 1 } } });
    const badFilters: Array<[unknown, string]> = [
      [{ content: 'x' }, 'query.filter.content'],
      [{ 'metadata.a': { $regex: 'x' } }, 'query.filter.metadata.a.$regex'],
      [{ 'metadata.a': { $gt: true } }, 'query.filter.metadata.a.$gt'],
      [{ 'metadata.a': { $in: [] } }, 'query.filter.metadata.a.$in'],
      [{ 'metadata.a': [1, 2] }, 'query.filter.metadata.a'],
      [{ 'metadata.a b': 1 }, 'query.filter.metadata.a b'],
      [{ $or: {} }, 'query.filter.$or'],
      [{ tags: { $gt: 1 } }, 'query.filter.tags.$gt'],
      ['text', 'query.filter'],
    ];
    for (const [filter, field] of badFilters) {
      const r = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'x', query: { filter } } });
      expect([r.status, r.body.error], JSON.stringify(filter)).toEqual([400, 'invalid_filter']);
      expect(r.body.details[0].field).toBe(field);
    }
    let deep: Record<string, unknown> = { 'metadata.a': 1 };
    for (let i = 0; i < 10; i++) deep = { $not: deep };
    expect((await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'x', query: { filter: deep } } })).body.error).toBe('invalid_filter');
    const badWhere = await t.request('GET', `/tool/vdb/${name}?where=${encodeURIComponent('{nope')}`, { token });
    expect([badWhere.status, badWhere.body.error]).toEqual([400, 'invalid_filter']);
    for (const query of [{ limit: 0 }, { limit: 'ten' }, { limit: 101 }, { top: 3 }]) {
      const r = await t.request('POST', `/tool/vdb/${name}/vector`, { token, body: { content: 'x', query } });
      expect([r.status, r.body.error], JSON.stringify(query)).toEqual([400, 'invalid_query']);
    }
    // The list's query parameters answer as the search's query does: 400 invalid_query.
    for (const query of ['limit=0', 'limit=101', 'limit=ten', 'limit=1.5', 'skip=-1', 'skip=x']) {
      const r = await t.request('GET', `/tool/vdb/${name}?${query}`, { token });
      expect([r.status, r.body.error], query.slice(0, 20)).toEqual([400, 'invalid_query']);
    }
    for (const body of [{}, { content: 1 }, { content: 'x', tags: 'a' }, { content: 'x', tags: [{}] }, { content: 'x', metadata: [] }, { content: 'x', extra: 1 }]) {
      const r = await t.request('POST', `/tool/vdb/${name}`, { token, body });
      expect(r.status, JSON.stringify(body)).toBe(422);
    }
    const malformed = await t.request('POST', `/tool/vdb/${name}`, { token, raw: '{"content":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect((await t.request('POST', `/tool/vdb/Nope_${name}/vector`, { token, body: { content: 'x' } })).body.error).toBe('vdb_collection_not_found');
    expect((await t.request('GET', `/tool/vdb/1bad`, { token })).status).toBe(404);
  });
}
