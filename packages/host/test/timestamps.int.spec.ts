import { Document, Team, User } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createDocument, createProject, doc, paragraph, type Actor } from './documents.fixtures.js';

// Data correctness (issue 10, item 10): an edit moves updated_at and leaves created_at, on both
// databases, whether read back through the API or straight from the database (a fresh unit of
// work, so no identity-map copy hides what was stored).
const pause = () => new Promise((resolve) => setTimeout(resolve, 25));

describe.each(testDatabases())('timestamps on $name', (db) => {
  let t: TestHost;
  let owner: Actor;

  beforeAll(async () => {
    t = await startTestHost(db, 'node');
    owner = await actor(t);
  });
  afterAll(() => t?.close());

  const stored = async <T extends { createdAt: Date; updatedAt: Date }>(entity: new () => T, id: string) => {
    const row = (await t.kernel.fork().findOneOrFail(entity as never, { id } as never)) as T;
    return { createdAt: row.createdAt.getTime(), updatedAt: row.updatedAt.getTime() };
  };

  it('moves a document updated_at on an edit and keeps created_at', async () => {
    const project = await createProject(t, owner.token);
    const created = await createDocument(t, owner.token, project.id, { content: doc(paragraph('p1', 'One')) });
    const before = await stored(Document, created.id);
    await pause();
    const edit = await t.request('POST', `/documents/${created.id}/edit`, {
      token: owner.token,
      body: { base_version: created.content_hash, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: 'Two' }] },
    });
    expect(edit.status).toBe(200);
    const after = await stored(Document, created.id);
    expect(after.updatedAt).toBeGreaterThan(before.updatedAt);
    expect(after.createdAt).toBe(before.createdAt);
    const read = await t.request('GET', `/documents/${created.id}/content`, { token: owner.token });
    expect(Date.parse(read.body.updated_at)).toBe(after.updatedAt);

    await pause();
    const renamed = await t.request('POST', '/documents', { token: owner.token, body: { documentId: created.id, title: 'Renamed' } });
    expect(renamed.status).toBe(200);
    const again = await stored(Document, created.id);
    expect(again.updatedAt).toBeGreaterThan(after.updatedAt);
    expect(again.createdAt).toBe(before.createdAt);
    expect(Date.parse(renamed.body.updated_at)).toBe(again.updatedAt);
    expect(Date.parse(renamed.body.created_at)).toBe(before.createdAt);
  });

  it('moves a team and a user updated_at on a change and keeps created_at', async () => {
    const team = await t.request('POST', '/teams', { token: owner.token, body: { name: 'Before' } });
    const teamBefore = await stored(Team, team.body.id);
    const userBefore = await stored(User, owner.userId);
    await pause();
    const renamed = await t.request('PATCH', `/teams/${team.body.id}`, { token: owner.token, body: { name: 'After' } });
    expect(renamed.status).toBe(200);
    const profile = await t.request('PATCH', '/auth/me', { token: owner.token, body: { name: 'New name' } });
    expect(profile.status).toBe(200);
    const teamAfter = await stored(Team, team.body.id);
    const userAfter = await stored(User, owner.userId);
    expect(teamAfter.updatedAt).toBeGreaterThan(teamBefore.updatedAt);
    expect(teamAfter.createdAt).toBe(teamBefore.createdAt);
    expect(userAfter.updatedAt).toBeGreaterThan(userBefore.updatedAt);
    expect(userAfter.createdAt).toBe(userBefore.createdAt);
    expect(Date.parse(renamed.body.updatedAt)).toBe(teamAfter.updatedAt);
    expect(Date.parse(profile.body.updatedAt)).toBe(userAfter.updatedAt);
  });
});
