import type { TestHost } from '@trellis/test-support';

/**
 * Shared steps of the projects, documents and collab suites: users with their three credential
 * kinds, projects and documents created through the API.
 */
export interface Actor {
  token: string;
  userId: string;
  email: string;
  apiKey: string;
  agentToken: string;
}

export async function actor(t: TestHost): Promise<Actor> {
  const user = await t.register();
  const apiKey = await t.request('POST', '/auth/api-keys', { token: user.token, body: { name: 'docs key' } });
  const agent = await t.request('POST', '/auth/agent-tokens', { token: user.token, body: { name: 'docs agent' } });
  if (apiKey.status !== 201 || agent.status !== 201) throw new Error(`credential issue failed: ${apiKey.text} ${agent.text}`);
  return { ...user, apiKey: apiKey.body.token, agentToken: agent.body.token };
}

let projects = 0;

export async function createProject(t: TestHost, token: string, body: Record<string, unknown> = {}): Promise<{ id: string; [key: string]: any }> {
  const r = await t.request('POST', '/project', { token, body: { name: `Project ${++projects}-${Date.now()}`, tools: [], access: 'team', ...body } });
  if (r.status !== 201) throw new Error(`create project failed: ${r.status} ${r.text}`);
  return r.body;
}

export async function createDocument(t: TestHost, token: string, projectId: string, body: Record<string, unknown> = {}): Promise<{ id: string; content_hash: string; [key: string]: any }> {
  const r = await t.request('POST', '/documents', { token, body: { projectId, title: 'Untitled', ...body } });
  if (r.status !== 201) throw new Error(`create document failed: ${r.status} ${r.text}`);
  return r.body;
}

export const paragraph = (id: string, text: string, name?: string) => ({
  type: 'paragraph',
  attrs: { id, ...(name !== undefined ? { name } : {}) },
  ...(text ? { content: [{ type: 'text', text }] } : {}),
});

export const doc = (...blocks: unknown[]) => (blocks.length ? { type: 'doc', content: blocks } : { type: 'doc' });

/** Polls `read` until `done` holds (no timing is asserted; the test timeout bounds it). */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what = 'condition'): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await read();
    if (done(value)) return value;
    if (i > 400) throw new Error(`gave up waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
