import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { aiErrors, aiProvidersServiceIdentifier, provide, type AiChatRequest, type AiProvider, type AiStreamPart } from '@trellis/core';
import { createTrellisClient, TrellisApiError, type RunEvent, type WebSocketConstructor } from '@trellis/client';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { contractFetch } from '../../host/test/support/contract-fetch.js';

/** A model that echoes the last message in pieces of four characters. */
class EchoProvider implements AiProvider<{ model: string }> {
  readonly service = 'echo';
  parseConf(conf: Record<string, unknown>) {
    if (typeof conf.model !== 'string') throw aiErrors.invalidConf([{ field: 'conf.model', constraint: 'isString', message: 'model is text.' }]);
    return { model: conf.model };
  }
  async *chat(_conf: { model: string }, request: AiChatRequest): AsyncIterable<AiStreamPart> {
    const last = request.messages.at(-1);
    for (const piece of `Echo: ${last?.content ?? ''}`.match(/[\s\S]{1,4}/g) ?? []) yield { type: 'text-delta', delta: piece };
    yield { type: 'finish', finishReason: 'stop', usage: { inputTokens: 10, outputTokens: 5 } };
  }
}

/** A fetch whose first event stream is cut after `bytes` bytes (mid-frame), as a dropped connection would. */
function cuttingFetch(base: typeof fetch, bytes: number): typeof fetch & { cuts: number; calls: number } {
  const wrapped = (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    wrapped.calls++;
    const response = await base(input, init);
    if (wrapped.cuts > 0 || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream') || !response.body) return response;
    wrapped.cuts++;
    const reader = response.body.getReader();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        const room = bytes - sent;
        if (value.length < room) {
          sent += value.length;
          return controller.enqueue(value);
        }
        controller.enqueue(value.slice(0, room));
        await reader.cancel();
        controller.error(new Error('connection cut by the test'));
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  }) as typeof fetch & { cuts: number; calls: number };
  wrapped.cuts = 0;
  wrapped.calls = 0;
  return wrapped;
}

const dense = (events: RunEvent[]) => events.map((e) => e.seq).every((seq, i) => seq === i + 1);

const workflow = {
  type: 'doc',
  content: [
    { type: 'inputBlock', attrs: { id: 'in-n', name: 'n', type: 'number', required: true } },
    { type: 'codeBlock', attrs: { id: 'code-count', name: 'count', language: 'javascript' }, content: [{ type: 'text', text: "for (let i = 1; i <= inputs.n; i++) emit('chunk ' + i + ' of a longer text; '); return inputs.n;" }] },
    { type: 'outputBlock', attrs: { id: 'out-out', name: 'out' }, content: [{ type: 'text', text: 'counted {{ count }}' }] },
  ],
};

/**
 * @trellis/client against a running host: the generated operations (openapi-fetch), run streams
 * that resume after a cut connection without starting a second run, and the user channel with
 * resume carrying a streamed conversation turn. Every HTTP response is checked against /openapi.json.
 */
describe.each(testDatabases())('@trellis/client on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let token: string;
    let bid: string;
    let deploymentToken: string;
    let convId: string;

    beforeAll(async () => {
      t = await startTestHost(db, transport, { adapters: [provide(aiProvidersServiceIdentifier, [new EchoProvider()])] });
      token = (await t.register()).token;
      const client = createTrellisClient({ baseUrl: t.url, token, fetch: contractFetch(t.contract) });
      const project = await client.api.POST('/project', { body: { name: `Client ${Date.now()}`, tools: [], access: 'private' } });
      expect(project.response.status).toBe(201);
      const block = await client.api.POST('/block/{projectId}', { params: { path: { projectId: project.data!.id } }, body: { name: 'Counter', type: 'workflow', content: workflow } });
      expect(block.response.status, JSON.stringify(block.error)).toBe(201);
      bid = block.data!.id;
      const deployed = await client.api.POST('/block/{blockId}/deploy', { params: { path: { blockId: bid } }, body: { access: 'token' } });
      expect(deployed.response.status).toBe(201);
      deploymentToken = deployed.data!.deploymentToken!;
      const model = await client.api.POST('/ai/models', { body: { name: 'Echo', service: 'echo', conf: { model: 'echo-1' } } });
      const bot = await client.api.POST('/bot', { body: { name: 'Echo bot', conf: { modelId: model.data!.id } } });
      const conv = await client.api.POST('/conversation', { body: { name: 'Chat', botId: bot.data!.id } });
      expect(conv.response.status).toBe(201);
      convId = conv.data!.id;
    });
    afterAll(() => t?.close());

    it('calls the generated operations with types and the bearer token; errors come back as data', async () => {
      const client = createTrellisClient({ baseUrl: t.url, token, fetch: contractFetch(t.contract) });
      const me = await client.api.GET('/auth/me');
      expect(me.response.status).toBe(200);
      expect(me.data!.user.email).toContain('@');
      const missing = await client.api.GET('/block/{pageId}', { params: { path: { pageId: '01936b2e-0000-7000-8000-000000000000' } } });
      expect(missing.response.status).toBe(404);
      expect(missing.error).toMatchObject({ error: 'block_not_found' });
      const anonymous = await createTrellisClient({ baseUrl: t.url }).api.GET('/auth/me');
      expect(anonymous.response.status).toBe(401);
    });

    it('runs a deployment and follows its events across a cut connection: every event once, in order, one run', async () => {
      const fetch = cuttingFetch(contractFetch(t.contract), 400);
      const client = createTrellisClient({ baseUrl: t.url, fetch });
      const events: RunEvent[] = [];
      for await (const event of client.runDeployment(bid, { inputs: { n: 30 }, deploymentToken }, { delayMs: 20 })) events.push(event);
      expect(fetch.cuts).toBe(1);
      expect(fetch.calls).toBeGreaterThanOrEqual(2);
      expect(dense(events)).toBe(true);
      expect(events[0]!.type).toBe('run_start');
      expect(events.at(-1)!.type).toBe('run_complete');
      expect(events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta)).toEqual(Array.from({ length: 30 }, (_, i) => `chunk ${i + 1} of a longer text; `));
      // One run: the reconnection attached to it.
      const runs = await createTrellisClient({ baseUrl: t.url, token }).api.GET('/documents/{documentId}/runs', { params: { path: { documentId: bid } } });
      expect(runs.data!.items.filter((r) => r.id === events[0]!.data.runId)).toHaveLength(1);
      expect(runs.data!.total).toBe(1);
    });

    it('follows a stored run\'s log from the start or after an event, resuming after a cut', async () => {
      const client = createTrellisClient({ baseUrl: t.url, token, fetch: cuttingFetch(contractFetch(t.contract), 300) });
      const started = await client.api.POST('/block/{bid}/api', { params: { path: { bid } }, body: { inputs: { n: 12 }, stream: false }, headers: { 'x-deployment-token': deploymentToken } });
      expect(started.response.status).toBe(200);
      const runId = (started.data as { runId: string }).runId;
      const all: RunEvent[] = [];
      for await (const event of client.followRun(bid, runId, { delayMs: 20 })) all.push(event);
      expect(dense(all)).toBe(true);
      expect(all.at(-1)).toMatchObject({ type: 'run_complete', data: { runId } });
      const tail: RunEvent[] = [];
      for await (const event of client.followRun(bid, runId, { after: all.length - 2 })) tail.push(event);
      expect(tail.map((e) => e.seq)).toEqual([all.length - 1, all.length]);
      await expect(async () => {
        for await (const _ of createTrellisClient({ baseUrl: t.url, token }).followRun(bid, '01936b2e-0000-7000-8000-000000000000')) void _;
      }).rejects.toBeInstanceOf(TrellisApiError);
    });

    it('streams a conversation turn over the user channel, and loses nothing when the channel drops and resumes', async () => {
      let sockets = 0;
      const Counting = class extends WebSocket {
        constructor(url: string) {
          super(url);
          sockets++;
        }
      } as unknown as WebSocketConstructor;
      const client = createTrellisClient({ baseUrl: t.url, token, fetch: contractFetch(t.contract) });
      const channel = client.userChannel({ WebSocket: Counting, reconnectDelayMs: 150 });
      await channel.connect();
      try {
        const first = await client.conversations.send(convId, 'hello there', { channel });
        expect(first.status).toBe('streaming');
        expect(await first.text()).toBe('Echo: hello there');
        const epoch = channel.epoch;
        const seen: number[] = [];
        channel.on('conversation', (params) => seen.push(params.seq));

        // The connection drops; the turn's pushes happen while the channel is away.
        channel.connection!.close();
        const second = await client.conversations.send(convId, 'while you were away', { channel });
        const events = [];
        for await (const event of second.events()) events.push(event);
        expect(sockets).toBe(2);
        expect(channel.epoch).toBe(epoch);
        expect(events.filter((e) => e.type === 'delta').map((e) => e.content).join('')).toBe('Echo: while you were away');
        expect(events.at(-1)).toMatchObject({ type: 'end', content: { status: 'completed' } });
        expect(seen).toEqual([...seen].sort((a, b) => a - b));
        expect(new Set(seen).size).toBe(seen.length);

        const quiet = await client.conversations.send(convId, 'no stream');
        expect(quiet.status).toBe('completed');
        expect(await quiet.text()).toBe('Echo: no stream');
      } finally {
        channel.close();
      }
    });
  });
});
