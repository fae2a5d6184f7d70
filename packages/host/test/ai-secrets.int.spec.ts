import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AiModelService, aiProvidersServiceIdentifier, provide } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { OpenAiWireServer, startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { startWeatherServer } from './support/ai-clients.js';

const HEADER_KEY = 'sk-header-secret-4711';
const X_API_KEY = 'xk-secret-0815-abc';
const TOOL_SECRET = 'tool-bearer-secret-99';
const TOOL_CONF_SECRET = 'tool-conf-secret-77';

const dump = async (t: TestHost, table: string) => JSON.stringify(await t.kernel.fork().getConnection().execute(`select * from ${table}`));

// Secrets of AI models and tools wherever they sit in conf (headers, secret-looking keys), over real
// sockets on both databases: sealed at rest, masked in every answer, opened only on the way out.
describe.each(testDatabases())('AI secrets in headers and secret-looking keys on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let wire: OpenAiWireServer;
    let weather: Awaited<ReturnType<typeof startWeatherServer>>;

    beforeAll(async () => {
      // The server accepts only `Authorization: Bearer <HEADER_KEY>`, which the model sends through conf.headers.
      wire = await new OpenAiWireServer({ apiKey: HEADER_KEY }).start();
      weather = await startWeatherServer();
      t = await startTestHost(db, transport, {
        adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider({ retry: { maxRetries: 0 } })])],
        config: { network: { allowPrivateNetworks: ['127.0.0.1'] } },
      });
    });
    afterAll(async () => {
      await t?.close();
      await wire?.close();
      await weather?.close();
    });

    it("seals a model's header values, answers them masked, keeps them when the mask comes back, and sends them in the clear", async () => {
      const user = await t.register();
      const conf = { model: 'gpt-test', baseURL: wire.baseURL, compatibility: 'compatible', headers: { Authorization: `Bearer ${HEADER_KEY}`, 'x-api-key': X_API_KEY } };
      const created = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'H', service: 'openai', conf } });
      expect(created.status).toBe(201);
      expect(created.body.conf).toEqual({ model: 'gpt-test', baseURL: wire.baseURL, compatibility: 'compatible', headers: { Authorization: '********', 'x-api-key': '********' } });
      const stored = await dump(t, 'ai_models');
      expect(stored).not.toContain(HEADER_KEY);
      expect(stored).not.toContain(X_API_KEY);

      const updated = await t.request('PUT', `/ai/models/${created.body.id}`, { token: user.token, body: { name: 'H2', service: 'openai', conf: { ...conf, temperature: 0.5, headers: { Authorization: '********', 'x-api-key': '********' } } } });
      expect(updated.status).toBe(200);
      expect(updated.body.conf.headers).toEqual({ Authorization: '********', 'x-api-key': '********' });
      for (const path of [`/ai/models/${created.body.id}`, '/ai/models']) {
        const read = await t.request('GET', path, { token: user.token });
        expect(read.text).not.toContain(HEADER_KEY);
        expect(read.text).not.toMatch(/enc:v1:/);
      }

      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: created.body.id } } });
      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
      wire.reset().enqueue({ text: ['Hi ', 'there.'] });
      const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hello' } });
      expect(sent.status).toBe(200);
      expect(sent.body.messages[1].content).toBe('Hi there.');
      expect(wire.chatRequests[0]!.headers['authorization']).toBe(`Bearer ${HEADER_KEY}`);
      expect(wire.chatRequests[0]!.headers['x-api-key']).toBe(X_API_KEY);
    });

    it('reads models whose headers were stored in plain text before, masks them, and seals them when resealed', async () => {
      const user = await t.register();
      const created = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'Old', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, compatibility: 'compatible' } } });
      const legacy = JSON.stringify({ model: 'gpt-test', baseURL: wire.baseURL, compatibility: 'compatible', headers: { Authorization: `Bearer ${HEADER_KEY}` } });
      await t.kernel.fork().getConnection().execute(`update ai_models set conf = '${legacy}' where id = '${created.body.id}'`);

      const read = await t.request('GET', `/ai/models/${created.body.id}`, { token: user.token });
      expect(read.body.conf.headers).toEqual({ Authorization: '********' });
      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: created.body.id } } });
      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
      wire.reset().enqueue({ text: ['Still ', 'works.'] });
      const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hello' } });
      expect(sent.status).toBe(200);
      expect(sent.body.messages[1].content).toBe('Still works.');

      // What the start-up pass does: plain secrets are sealed, and the model keeps working.
      expect(await t.kernel.get(AiModelService).reseal(t.kernel.fork())).toBeGreaterThanOrEqual(1);
      expect(await dump(t, 'ai_models')).not.toContain(HEADER_KEY);
      wire.reset().enqueue({ text: ['Sealed ', 'now.'] });
      const again = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'again' } });
      expect(again.body.messages[1].content).toBe('Sealed now.');
    });

    it("seals tool actions' headers and secret-looking conf keys, masks them, keeps them on update, and sends them", async () => {
      const user = await t.register();
      const action = { name: 'echo', type: 'http', conf: { method: 'POST', url: `${weather.url}/echo`, headers: { 'x-token': TOOL_SECRET, 'x-plain': 'visible-name' }, body: { q: '{{content}}' } } };
      const created = await t.request('POST', '/ai/tools', { token: user.token, body: { name: 'Echo', conf: { apiToken: TOOL_CONF_SECRET, region: 'eu' }, actions: [action] } });
      expect(created.status).toBe(201);
      expect(created.body.conf).toEqual({ apiToken: '********', region: 'eu' });
      expect(created.body.actions[0].conf.headers).toEqual({ 'x-token': '********', 'x-plain': '********' });
      const stored = await dump(t, 'ai_tools');
      expect(stored).not.toContain(TOOL_SECRET);
      expect(stored).not.toContain(TOOL_CONF_SECRET);

      const masked = { ...action, conf: { ...action.conf, headers: { 'x-token': '********', 'x-plain': '********' } } };
      const updated = await t.request('PUT', `/ai/tools/${created.body.id}`, { token: user.token, body: { name: 'Echo', conf: { apiToken: '********', region: 'us' }, actions: [masked] } });
      expect(updated.status).toBe(200);
      for (const read of [await t.request('GET', `/ai/tools/${created.body.id}`, { token: user.token }), await t.request('GET', '/ai/tools', { token: user.token })]) {
        expect(read.text).not.toContain(TOOL_SECRET);
        expect(read.text).not.toContain(TOOL_CONF_SECRET);
        expect(read.text).not.toMatch(/enc:v1:/);
      }

      const model = await t.request('POST', '/ai/models', { token: user.token, body: { name: 'M', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, compatibility: 'compatible', apiKey: HEADER_KEY } } });
      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
      const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
      wire.reset();
      const sent = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: 'hello' } });
      const executed = await t.request('POST', `/ai/tools/${created.body.id}/execute`, { token: user.token, body: { content: 'ping', convId: conv.body.id, msgId: sent.body.messages[0].id, hook: 'echo' } });
      expect(executed.status).toBe(200);
      expect(executed.body.result).toEqual({ received: { q: 'ping' }, auth: TOOL_SECRET });
      expect(JSON.stringify(await dump(t, 'ai_tools'))).toMatch(/enc:v1:/);
    });

    it('answers a bot body that fails validation with 400 on create, as on update', async () => {
      const user = await t.register();
      const created = await t.request('POST', '/bot', { token: user.token, body: { name: '', conf: {} } });
      expect(created.status).toBe(400);
      expect(created.body.error).toBe('validation_failed');
      const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: {} } });
      const updated = await t.request('PUT', `/bot/${bot.body.id}`, { token: user.token, body: { name: '' } });
      expect(updated.status).toBe(400);
      expect(updated.body.error).toBe('validation_failed');
    });
  });
});

// The default log level, a provider that echoes the refused credentials in its 401 body.
describe.each(testDatabases())('provider errors in the logs on $name', (db) => {
  const lines: string[] = [];
  let t: TestHost;
  let wire: OpenAiWireServer;
  const PRIVATE = 'my private question about the merger';

  beforeAll(async () => {
    wire = await new OpenAiWireServer({ apiKey: HEADER_KEY }).start();
    t = await startTestHost(db, 'node', {
      adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider({ retry: { maxRetries: 0 } })])],
      config: { network: { allowPrivateNetworks: ['127.0.0.1'] } },
      logger: pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) })),
    });
  });
  afterAll(async () => {
    await t?.close();
    await wire?.close();
  });

  it('logs neither the echoed key nor header values nor the conversation when the provider refuses the key', async () => {
    const user = await t.register();
    const echo = `Incorrect API key provided: ${HEADER_KEY} (x-api-key ${X_API_KEY}).`;
    const model = await t.request('POST', '/ai/models', {
      token: user.token,
      body: { name: 'E', service: 'openai', conf: { model: 'gpt-test', baseURL: wire.baseURL, apiKey: HEADER_KEY, headers: { 'x-api-key': X_API_KEY } } },
    });
    const bot = await t.request('POST', '/bot', { token: user.token, body: { name: 'B', conf: { modelId: model.body.id } } });
    const conv = await t.request('POST', '/conversation', { token: user.token, body: { name: 'C', botId: bot.body.id } });
    wire.reset().enqueue({ error: { status: 401, message: echo } }, { error: { status: 500, message: echo } }, { error: { status: 400, message: echo } });
    const refused = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: PRIVATE } });
    expect(refused.status).toBe(502);
    expect(refused.body.error).toBe('ai_auth_failed');
    const failed = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: PRIVATE } });
    expect(failed.status).toBe(503);
    const rejected = await t.request('POST', `/conversation/${conv.body.id}/messages`, { token: user.token, body: { content: PRIVATE } });
    expect(rejected.status).toBe(400);
    expect(wire.chatRequests).toHaveLength(3);

    for (const answer of [refused, failed, rejected]) {
      expect(answer.text).not.toContain(HEADER_KEY);
      expect(answer.text).not.toContain(X_API_KEY);
    }
    const messages = await t.request('GET', `/conversation/${conv.body.id}/messages`, { token: user.token });
    expect(messages.text).not.toContain(HEADER_KEY);
    expect(messages.text).not.toContain(X_API_KEY);

    const log = lines.join('');
    expect(log).toMatch(/request failed/);
    expect(log).not.toContain(HEADER_KEY);
    expect(log).not.toContain(X_API_KEY);
    expect(log).not.toContain(PRIVATE);
  });
});
