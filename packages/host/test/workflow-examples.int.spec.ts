import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiProvider } from '@trellis/ai-openai';
import { aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiWireServer, startTestHost, testDatabases, type TestHost, type WireReply } from '@trellis/test-support';
import { createProject } from './documents.fixtures.js';

/**
 * Runs every example under examples/workflows/ (see its README for the convention) against a real
 * host on each test database: `POST /documents/{id}/run` with `stream: false`, then compares the
 * `globalCtx` entries named in expected.json. Http blocks call a local echo server (`toolUrl`), LLM
 * blocks a local OpenAI-compatible server (`modelId`); children are created and deployed first.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../examples/workflows');
const examples = readdirSync(root, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, entry.name, 'workflow.json')))
  .map((entry) => entry.name)
  .sort();
const readJson = (...parts: string[]) => JSON.parse(readFileSync(join(root, ...parts), 'utf8')) as Record<string, unknown>;

/** `{{children.<name>}}` placeholders of a workflow.json, replaced by the deployed children's ids. */
const substitute = (text: string, ids: Record<string, string>) =>
  text.replace(/\{\{\s*(children\.[A-Za-z0-9_-]+)\s*\}\}/g, (match, key: string) => {
    if (!(key in ids)) throw new Error(`no ${key} for the placeholder ${match}`);
    return ids[key]!;
  });

/**
 * The echo server: POST /echo answers the JSON body it got; /fail answers 500; /keyed answers
 * `{ calls, idempotencyKey }` (how often it saw the request's Idempotency-Key). Counts calls by path.
 */
function echoServer(): Promise<{ url: string; calls: Map<string, number>; server: Server }> {
  const calls = new Map<string, number>();
  const keys = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      calls.set(path, (calls.get(path) ?? 0) + 1);
      if (path === '/keyed') {
        const key = String(req.headers['idempotency-key'] ?? '');
        keys.set(key, (keys.get(key) ?? 0) + 1);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ calls: keys.get(key), idempotencyKey: key }));
        return;
      }
      if (path === '/fail') {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"failing on purpose"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks).length ? Buffer.concat(chunks) : '{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server })));
}

describe.each(testDatabases())('workflow examples on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let wire: OpenAiWireServer;
  let echo: Awaited<ReturnType<typeof echoServer>>;
  beforeAll(async () => {
    wire = await new OpenAiWireServer().start();
    echo = await echoServer();
    host = await startTestHost(db, 'node', {
      adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider({ retry: { maxRetries: 0 } })])],
      config: { network: { allowPrivateNetworks: ['127.0.0.1'] } } as never,
    });
    t = host;
  });
  afterAll(async () => {
    await host?.close();
    await wire?.close();
    await new Promise((resolve) => echo?.server.close(resolve));
  });

  it('finds the examples', () => {
    expect(examples).toEqual(expect.arrayContaining(['condition', 'branch', 'loop-map', 'repeat-until', 'parallel']));
  });

  it.each(examples)('%s', async (name) => {
    const user = await t.register();
    const project = await createProject(t, user.token);
    const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'Wire', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: 'sk-test' } } });
    expect(model.status, model.text).toBe(201);
    const ids: Record<string, string> = {};
    // Children first: each is created as a workflow block of the project and deployed.
    const childrenDir = join(root, name, 'children');
    if (existsSync(childrenDir)) {
      for (const child of readdirSync(childrenDir).sort()) {
        const content = JSON.parse(substitute(readFileSync(join(childrenDir, child, 'workflow.json'), 'utf8'), ids));
        const block = await t.request('POST', `/block/${project.id}`, { token: user.token, body: { name: `${name}/${child}`, type: 'workflow', content } });
        expect(block.status, block.text).toBe(201);
        const deployed = await t.request('POST', `/block/${block.body.id}/deploy`, { token: user.token, body: { access: 'private' } });
        expect(deployed.status, deployed.text).toBe(201);
        ids[`children.${child}`] = block.body.id;
      }
    }
    const content = JSON.parse(substitute(readFileSync(join(root, name, 'workflow.json'), 'utf8'), ids));
    const doc = await t.request('POST', '/documents', { token: user.token, body: { projectId: project.id, title: `Example ${name}`, content } });
    expect(doc.status, doc.text).toBe(201);
    // `toolUrl` and `modelId` for the workflows that declare them (an undeclared input is refused).
    const declared = new Set<string>();
    const walk = (node: { type?: string; attrs?: { name?: string }; content?: unknown[] }) => {
      if (node.type === 'inputBlock' && node.attrs?.name) declared.add(node.attrs.name);
      for (const child of node.content ?? []) walk(child as typeof node);
    };
    walk(content);
    const provided: Record<string, unknown> = { toolUrl: echo.url, modelId: model.body.id };
    const inputs = { ...readJson(name, 'inputs.json'), ...Object.fromEntries(Object.entries(provided).filter(([key]) => declared.has(key))) };
    // Scripted model answers (e.g. JSON for structured output), in order; else the wire server echoes.
    wire.reset();
    if (existsSync(join(root, name, 'model-replies.json'))) wire.enqueue(...(JSON.parse(readFileSync(join(root, name, 'model-replies.json'), 'utf8')) as WireReply[]));
    // run.json: more fields of the run request (a budget, a timeout, ...).
    const extra = existsSync(join(root, name, 'run.json')) ? readJson(name, 'run.json') : {};
    const run = await t.request('POST', `/documents/${doc.body.id}/run`, { token: user.token, body: { ...extra, inputs, stream: false } });
    expect(run.status, run.text).toBe(200);
    expect(run.body.status, JSON.stringify(run.body.error)).toBe('completed');
    const ctx = new Map((run.body.globalCtx as Array<{ name: string; value: unknown }>).map((entry) => [entry.name, entry.value]));
    for (const [key, value] of Object.entries(readJson(name, 'expected.json'))) {
      expect(ctx.has(key), `globalCtx has ${key}`).toBe(true);
      expect(ctx.get(key), key).toEqual(value);
    }
  });
});
