import type { Host } from '@trellis/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUppercaseExample } from './server.js';

const jwtSecret = 'example-secret-example-secret-0123456789';

describe('the uppercase block kind example server', () => {
  let host: Host;
  beforeAll(async () => {
    host = await startUppercaseExample({ port: 0, database: ':memory:', config: { auth: { jwtSecret }, log: { level: 'silent' } } as never });
  });
  afterAll(() => host?.stop());

  const call = async (method: string, path: string, token: string | undefined, body?: unknown) => {
    const response = await fetch(`${host.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  it('runs a document whose workflow uses the uppercase block', async () => {
    const { body: user } = await call('POST', '/auth/register', undefined, { email: 'shout@example.com', password: 'correct horse battery' });
    const project = await call('POST', '/project', user.token, { name: 'Shouting', tools: [], access: 'team' });
    const content = {
      type: 'doc',
      content: [
        { type: 'inputBlock', attrs: { id: 'in', name: 'topic', type: 'string' } },
        { type: 'uppercaseBlock', attrs: { id: 'u1', name: 'loud', exclaim: 3 }, content: [{ type: 'text', text: 'about {{ topic }}' }] },
        { type: 'outputBlock', attrs: { id: 'out', name: 'result' }, content: [{ type: 'text', text: '{{ loud }}' }] },
      ],
    };
    const document = await call('POST', '/documents', user.token, { projectId: project.body.id, title: 'Shout', content });
    expect(document.status).toBe(201);
    const run = await call('POST', `/documents/${document.body.id}/run`, user.token, { stream: false, inputs: { topic: 'gardens' } });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('completed');
    expect(run.body.globalCtx.find((entry: { name: string }) => entry.name === 'result').value).toBe('ABOUT GARDENS!!!');
  });
});
