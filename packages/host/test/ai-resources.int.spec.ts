import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProvidersServiceIdentifier, provide, UserService } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, startTestHost, type WireReply, testDatabases, transports, type TestDatabase, type TestHost } from '@trellis/test-support';
import { ScriptedProvider } from './support/ai-clients.js';

const SECRET = 'sk-right';

async function developer(t: TestHost) {
  const email = `aidev-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  await t.kernel.get(UserService).create(t.kernel.fork(), { email, password: 'correct horse battery', isDeveloper: true });
  const login = await t.request('POST', '/auth/login', { body: { email, password: 'correct horse battery' } });
  return { token: login.body.token as string, userId: login.body.user.id as string };
}

// AI models, AI tools and bots over real sockets, on both databases and both transports.
describe.each(testDatabases())('AI models, tools and bots on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { adapters: [provide(aiProvidersServiceIdentifier, [new ScriptedProvider()])] });
    });
    afterAll(() => t?.close());

    it('creates, lists with paging, reads, updates and deletes AI models; secrets answer masked', async () => {
      const user = await t.register();
      const created = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'M1', desc: 'first', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET, temperature: 0.2 } } });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'M1', desc: 'first', service: 'scripted', ownerId: user.userId, providerInstalled: true, conf: { model: 'echo-1', apiKey: '********', temperature: 0.2 } });
      const id = created.body.id;
      await t.request('POST', '/ai/models', { token: user.token, body: { name: 'M2', service: 'elsewhere', conf: { anything: true } } });

      const page = await t.request('GET', '/ai/models?page=2&limit=1', { token: user.token });
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ total: 2, page: 2, size: 1 });
      expect(page.body.items[0]).toMatchObject({ name: 'M1', providerInstalled: true });
      const first = await t.request('GET', '/ai/models?limit=1', { token: user.token });
      expect(first.body.items[0]).toMatchObject({ name: 'M2', service: 'elsewhere', providerInstalled: false });

      const got = await t.request('GET', `/ai/models/${id}`, { token: user.token });
      expect(got.status).toBe(200);
      expect(got.body.conf.apiKey).toBe('********');

      const updated = await t.request('PUT', `/ai/models/${id}`, { token: user.token, body: { name: 'M1b', service: 'scripted', conf: { model: 'echo-2', apiKey: '********' } } });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ name: 'M1b', desc: null, conf: { model: 'echo-2', apiKey: '********' } });

      const invalid = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'Bad', service: 'scripted', conf: { apiKey: 'x' } } });
      expect(invalid.status).toBe(422);
      expect(invalid.body).toMatchObject({ error: 'invalid_model_conf', details: [{ field: 'conf.model', constraint: 'isString' }] });
      const badService = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'Bad', service: 'Open AI', conf: {} } });
      expect(badService.status).toBe(422);
      expect(badService.body.error).toBe('validation_failed');

      const other = await t.register();
      expect((await t.request('GET', `/ai/models/${id}`, { token: other.token })).status).toBe(404);
      expect((await t.request('DELETE', `/ai/models/${id}`, { token: other.token })).body.error).toBe('model_not_found');
      expect((await t.request('DELETE', `/ai/models/${id}`, { token: user.token })).status).toBe(204);
      const gone = await t.request('GET', `/ai/models/${id}`, { token: user.token });
      expect(gone.status).toBe(404);
      expect(gone.body.error).toBe('model_not_found');
    });

    it('creates, lists, reads, updates and deletes AI tools; refuses bad actions with details', async () => {
      const user = await t.register();
      const body = {
        name: 'Search',
        desc: 'Web search',
        service: 'custom',
        conf: { region: 'eu' },
        actions: [
          { name: 'query', type: 'http', conf: { method: 'post', url: 'https://api.example.com/search', body: { q: '{{q}}' } } },
          { name: 'remote', type: 'mcp', conf: { url: 'https://mcp.example.com/mcp', tool: 'lookup' } },
        ],
      };
      const created = await t.request('POST', '/ai/tools', { token: user.token, body });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'Search', desc: 'Web search', service: 'custom', conf: { region: 'eu' }, ownerId: user.userId });
      expect(created.body.actions[0]).toEqual({ name: 'query', type: 'http', conf: { method: 'POST', url: 'https://api.example.com/search', body: { q: '{{q}}' } } });
      const id = created.body.id;

      const list = await t.request('GET', '/ai/tools?page=1&limit=5', { token: user.token });
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 1, page: 1, size: 5 });
      expect((await t.request('GET', `/ai/tools/${id}`, { token: user.token })).body).toEqual(created.body);

      const updated = await t.request('PUT', `/ai/tools/${id}`, { token: user.token, body: { name: 'Search2', actions: [] } });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ name: 'Search2', desc: null, service: null, conf: {}, actions: [] });

      const bad = await t.request('POST', '/ai/tools', {
        token: user.token,
        body: { name: 'X', actions: [{ name: 'a', type: 'ftp' }, { name: 'b', type: 'http', conf: { url: 'file:///etc/passwd' } }, { name: 'c', type: 'mcp', conf: { url: 'https://x.example' } }] },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_tool_action');
      expect(bad.body.details.map((d: { field: string }) => d.field)).toEqual(['actions.0.type', 'actions.1.conf.url', 'actions.2.conf.tool']);

      const other = await t.register();
      expect((await t.request('GET', `/ai/tools/${id}`, { token: other.token })).status).toBe(404);
      expect((await t.request('DELETE', `/ai/tools/${id}`, { token: user.token })).status).toBe(204);
      const gone = await t.request('DELETE', `/ai/tools/${id}`, { token: user.token });
      expect(gone.status).toBe(404);
      expect(gone.body.error).toBe('tool_not_found');
    });

    it('manages bots whose conf names usable models; deleting a bot deletes its conversations and messages', async () => {
      const user = await t.register();
      const other = await t.register();
      const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET } } });
      const foreign = await t.request('POST', '/ai/models', { token: other.token, body: { name: 'F', service: 'scripted', conf: { model: 'echo-1' } } });

      const created = await t.request('POST', '/bot', { token: user.token, body: { name: 'Bot', conf: { avatar: 'a.png', desc: 'helps', modelId: model.body.id, color: 'blue' } } });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ name: 'Bot', ownerId: user.userId, conf: { avatar: 'a.png', desc: 'helps', modelId: model.body.id, color: 'blue' } });
      const id = created.body.id;
      const notYours = await t.request('POST', '/bot', { token: user.token, body: { name: 'Bot', conf: { modelId: foreign.body.id } } });
      expect(notYours.status).toBe(400);
      expect(notYours.body).toMatchObject({ error: 'invalid_bot_conf', details: [{ field: 'conf.modelId' }] });

      const list = await t.request('GET', '/bot?page=1&limit=10', { token: user.token });
      expect(list.body).toMatchObject({ total: 1, page: 1, size: 10, items: [{ id }] });
      expect((await t.request('GET', `/bot/${id}`, { token: user.token })).body).toEqual(created.body);
      expect((await t.request('GET', `/bot/${id}`, { token: other.token })).status).toBe(404);

      const updated = await t.request('PUT', `/bot/${id}`, { token: user.token, body: { conf: { modelId: model.body.id } } });
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({ name: 'Bot', conf: { modelId: model.body.id } });
      expect(updated.body.conf.avatar).toBeUndefined();
      const badUpdate = await t.request('PUT', `/bot/${id}`, { token: user.token, body: { name: '' } });
      expect(badUpdate.status).toBe(400);

      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: id } });
      const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hi' } });
      expect(sent.status).toBe(200);
      expect((await t.request('DELETE', `/bot/${id}`, { token: user.token })).status).toBe(204);
      expect((await t.request('GET', `/bot/${id}`, { token: user.token })).body.error).toBe('bot_not_found');
      expect((await t.request('GET', `/conversation/${conv.body.id}`, { token: user.token })).status).toBe(404);
      const rows = await t.kernel.fork().getConnection().execute(`select count(*) as n from messages where conversation_id = '${conv.body.id}'`);
      expect(Number((rows as Array<{ n: number | string }>)[0]!.n)).toBe(0);
    });

    it('never answers a stored API key: AI endpoints, the developer API and its generic operations mask it', async () => {
      const dev = await developer(t);
      const viaAi = await t.request('POST', '/ai/models', { token: dev.token, body: { name: 'K', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET } } });
      const viaDev = await t.request('POST', '/dev/model', { token: dev.token, body: { name: 'D', type: 'chat', config: { apiKey: 'sk-dev-secret' } } });
      expect(viaDev.status).toBe(201);
      expect(viaDev.body.config.apiKey).toBe('********');
      const reads = await Promise.all([
        t.request('GET', '/ai/models', { token: dev.token }),
        t.request('GET', `/ai/models/${viaAi.body.id}`, { token: dev.token }),
        t.request('GET', '/dev/model/list', { token: dev.token }),
        t.request('GET', `/dev/model/${viaAi.body.id}`, { token: dev.token }),
        t.request('GET', `/dev/model/${viaDev.body.id}`, { token: dev.token }),
        t.request('GET', '/dev/list?type=model', { token: dev.token }),
        t.request('PUT', `/dev/model/${viaAi.body.id}`, { token: dev.token, body: { name: 'K2' } }),
      ]);
      for (const r of reads) {
        expect(r.text).not.toContain(SECRET);
        expect(r.text).not.toContain('sk-dev-secret');
        expect(r.text).not.toMatch(/enc:v1:/);
      }
      expect(reads.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
      expect(reads[6]!.body.config.apiKey).toBe('********');
      // The key still works: a conversation through this model reaches the provider with it.
      const bot = await t.request('POST', '/bot', { token: dev.token, body: { name: 'B', conf: { modelId: viaAi.body.id } } });
      const conv = await t.request('POST', '/conversation', { token: dev.token, body: { name: 'C', botId: bot.body.id } });
      const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: dev.token, body: { content: 'ping' } });
      expect(sent.status).toBe(200);
      expect(sent.body.messages[1].content).toBe('Echo: ping');
      // And the rows hold ciphertext only.
      const rows = (await t.kernel.fork().getConnection().execute('select conf from ai_models')) as Array<{ conf: unknown }>;
      const stored = JSON.stringify(rows);
      expect(stored).not.toContain(SECRET);
      expect(stored).not.toContain('sk-dev-secret');
      expect(stored).toMatch(/enc:v1:k1:/);
    });
  });
});

// The database file and the logs: a file-backed SQLite database and a logger that keeps every line.
describe('AI model secrets at rest and in logs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-ai-secrets-'));
  const lines: string[] = [];
  let t: TestHost;
  let wire: OpenAiWireServer;
  const fileDb: TestDatabase = {
    name: 'sqlite',
    async create() {
      return { adapter: sqliteDatabase({ path: join(dir, 'trellis.db') }), url: `sqlite:${join(dir, 'trellis.db')}`, drop: async () => undefined };
    },
  };

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    wire = await new OpenAiWireServer({ apiKey: SECRET }).start();
    t = await startTestHost(fileDb, 'node', {
      adapters: [provide(aiProvidersServiceIdentifier, [new ScriptedProvider(), new OpenAiProvider({ retry: { maxRetries: 0 } })])],
      logger: pino({ level: 'trace' }, sink),
      config: { ai: { encryption: { key: Buffer.alloc(32, 7).toString('base64'), keyId: 'k9' } }, network: { allowPrivateNetworks: ['127.0.0.1'] } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await wire?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the key out of the database file and the logs, also through failures', async () => {
    const user = await t.register();
    const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'K', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET } } });
    expect(model.status).toBe(201);
    await t.request('PUT', `/ai/models/${model.body.id}`, { token: user.token, body: { name: 'K', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET } } });
    await t.request('POST', '/ai/models', { token: user.token, body: { name: 'Bad', service: 'scripted', conf: { apiKey: SECRET } } });
    const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
    expect((await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hello' } })).status).toBe(200);

    // Failures of a real adapter are logged with their cause (the vendor's error): still no key.
    const openai = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'O', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: SECRET } } });
    const wrong = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'W', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: `${SECRET}-but-wrong` } } });
    const cases: Array<[string, number, WireReply | null]> = [
      [openai.body.id, 503, { error: { status: 500, message: 'upstream exploded' } }],
      [wrong.body.id, 502, null],
      [openai.body.id, 200, { text: ['fine'] }],
    ];
    for (const [modelId, status, reply] of cases) {
      if (reply) wire.enqueue(reply);
      const b = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId } } });
      const c = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: b.body.id } });
      const r = await t.request('POST', `/conversation/${c.body.id}/messages`, { token: user.token, body: { content: 'hello' } });
      expect(r.status).toBe(status);
      const s = await t.request('POST', `/conversation/${c.body.id}/messages/run`, { token: user.token, body: { stream: true } });
      expect([202, 409]).toContain(s.status);
    }
    expect(lines.join('')).toMatch(/request failed/);

    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain(SECRET);
    await t.kernel.fork().getConnection().execute('pragma wal_checkpoint(truncate)').catch(() => undefined);
    for (const file of readdirSync(dir)) {
      const bytes = readFileSync(join(dir, file));
      expect(bytes.includes(Buffer.from(SECRET))).toBe(false);
    }
    const rows = (await t.kernel.fork().getConnection().execute('select conf from ai_models')) as Array<{ conf: string }>;
    expect(JSON.stringify(rows)).toMatch(/enc:v1:k9:/);
  });

  it('rotates the key: a restart with a new key and the old one in previousKeys re-encrypts every secret', async () => {
    const user = await t.register();
    const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'R', service: 'scripted', conf: { model: 'echo-1', apiKey: SECRET } } });
    const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
    // A secret written in plain text behind Trellis' back (or before encryption existed).
    const plain = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'P', service: 'scripted', conf: { model: 'echo-1' } } });
    await t.kernel.fork().getConnection().execute(`update ai_models set conf = '{"model":"echo-1","apiKey":"sk-plain-legacy"}' where id = '${plain.body.id}'`);
    await t.close();
    t = await startTestHost(fileDb, 'node', {
      adapters: [provide(aiProvidersServiceIdentifier, [new ScriptedProvider()])],
      logger: pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) })),
      config: { ai: { encryption: { key: Buffer.alloc(32, 9).toString('base64'), keyId: 'k10', previousKeys: { k9: Buffer.alloc(32, 7).toString('base64') } } } },
    });
    const rows = JSON.stringify(await t.kernel.fork().getConnection().execute('select conf from ai_models'));
    expect(rows).toMatch(/enc:v1:k10:/);
    expect(rows).not.toMatch(/enc:v1:k9:/);
    expect(rows).not.toContain('sk-plain-legacy');
    expect(lines.join('')).toMatch(/re-encrypted with the current key/);
    const login = await t.request('POST', '/auth/login', { body: { email: user.email, password: 'correct horse battery' } });
    const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: login.body.token, body: { content: 'after rotation' } });
    expect(sent.status).toBe(200);
    expect(sent.body.messages[1].content).toBe('Echo: after rotation');
  });
});
