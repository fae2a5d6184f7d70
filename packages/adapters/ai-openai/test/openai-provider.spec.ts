import type { TrellisError } from '@trellis/core';
import { collectParts, collectUntilError, describeProviderLive, describeProviderOnWire, fastRetry, OpenAiWireServer } from '@trellis/test-support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAiProvider } from '../src/index.js';

const startWire = (apiKey: string) => new OpenAiWireServer({ apiKey }).start();

describeProviderOnWire({
  name: 'OpenAiProvider (OpenAI API through @ai-sdk/openai) on the OpenAI wire format',
  provider: (retry) => new OpenAiProvider({ retry }),
  startWire,
  conf: (wire, apiKey) => ({ model: 'gpt-wire', baseURL: (wire as OpenAiWireServer).baseURL, apiKey, compatibility: 'openai' }),
  embeddings: true,
});

describeProviderOnWire({
  name: 'OpenAiProvider (OpenAI-compatible server through @ai-sdk/openai-compatible) on the OpenAI wire format',
  provider: (retry) => new OpenAiProvider({ retry }),
  startWire,
  conf: (wire, apiKey) => ({ model: 'llama3.1:8b', baseURL: `${(wire as OpenAiWireServer).baseURL}/`, apiKey }),
  embeddings: true,
});

describe('OpenAiProvider requests and conf', () => {
  let wire: OpenAiWireServer;
  const provider = new OpenAiProvider({ retry: fastRetry });
  beforeAll(async () => {
    wire = await new OpenAiWireServer().start();
  });
  afterAll(async () => {
    await wire.close();
  });
  beforeEach(() => {
    wire.reset();
  });

  it('sends the model, sampling settings, stream_options.include_usage and extra headers', async () => {
    for (const compatibility of ['openai', 'compatible'] as const) {
      wire.reset().enqueue({ text: ['ok'] });
      const conf = provider.parseConf({ model: 'm-1', baseURL: wire.baseURL, apiKey: 'k', compatibility, temperature: 0.3, maxTokens: 99, topP: 0.5, stop: ['END'], seed: 7, headers: { 'x-tenant': 't1' } });
      await collectParts(provider.chat(conf, { messages: [{ role: 'user', content: 'hi' }], temperature: 0.9 }));
      const sent = wire.chatRequests[0];
      expect(sent.headers['x-tenant']).toBe('t1');
      expect(sent.headers.authorization).toBe('Bearer k');
      expect(sent.body).toMatchObject({ model: 'm-1', stream: true, stream_options: { include_usage: true }, temperature: 0.9, top_p: 0.5, stop: ['END'], seed: 7 });
      expect(sent.body.max_tokens ?? sent.body.max_completion_tokens).toBe(99);
      expect(sent.body.messages).toEqual([{ role: 'user', content: 'hi' }]);
    }
  });

  it('reports zero usage when the server sends none', async () => {
    wire.enqueue({ text: ['ok'], usage: null });
    const parts = await collectParts(provider.chat(provider.parseConf({ model: 'local', baseURL: wire.baseURL }), { messages: [{ role: 'user', content: 'hi' }] }));
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 0 } });
  });

  it('maps finish reasons (length)', async () => {
    wire.enqueue({ text: ['cut'], finishReason: 'length' });
    const parts = await collectParts(provider.chat(provider.parseConf({ model: 'local', baseURL: wire.baseURL }), { messages: [{ role: 'user', content: 'hi' }] }));
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' });
  });

  it('streams two tool calls of one turn', async () => {
    wire.enqueue({ toolCalls: [{ name: 'a_tool', arguments: '{"x":1}' }, { name: 'b_tool', arguments: ['{"y":', '"two"}'] }] });
    const parts = await collectParts(
      provider.chat(provider.parseConf({ model: 'local', baseURL: wire.baseURL }), {
        messages: [{ role: 'user', content: 'both' }],
        tools: [
          { name: 'a_tool', description: 'A', parameters: { type: 'object', properties: { x: { type: 'number' } } } },
          { name: 'b_tool', description: 'B', parameters: { type: 'object', properties: { y: { type: 'string' } } } },
        ],
      }),
    );
    expect(parts.filter((part) => part.type === 'tool-call').map((part) => [(part as any).toolName, (part as any).input])).toEqual([
      ['a_tool', { x: 1 }],
      ['b_tool', { y: 'two' }],
    ]);
  });

  it('passes a tool call with malformed arguments on as raw text, and a call to a tool not offered as is', async () => {
    wire.enqueue({ toolCalls: [{ name: 'a_tool', arguments: '{"x":' }, { name: 'not_offered', arguments: '{"y":2}' }] });
    const parts = await collectParts(
      provider.chat(provider.parseConf({ model: 'local', baseURL: wire.baseURL }), {
        messages: [{ role: 'user', content: 'go' }],
        tools: [{ name: 'a_tool', description: 'A', parameters: { type: 'object', properties: { x: { type: 'number' } } } }],
      }),
    );
    expect(parts.filter((part) => part.type === 'tool-call').map((part) => [(part as any).toolName, (part as any).input])).toEqual([
      ['a_tool', '{"x":'],
      ['not_offered', { y: 2 }],
    ]);
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' });
  });

  it('fails on an error chunk sent mid-stream, after the deltas it already yielded', async () => {
    wire.enqueue({ text: ['Half'], streamError: { status: 500, message: 'The server had an error while processing your request.' } });
    const { parts, error } = await collectUntilError(provider.chat(provider.parseConf({ model: 'local', baseURL: wire.baseURL }), { messages: [{ role: 'user', content: 'go' }] }));
    expect(parts).toEqual([{ type: 'text-delta', delta: 'Half' }]);
    expect((error as TrellisError).code).toBe('ai_unavailable');
    expect(wire.chatRequests).toHaveLength(1);
  });

  it('embeds texts in order with usage, for both compatibility modes', async () => {
    for (const [compatibility, model] of [['openai', 'text-embedding-3-small'], ['compatible', 'nomic-embed-text']] as const) {
      wire.reset().enqueue({ embeddings: [[0.1, 0.2], [0.3, 0.4]], usage: { inputTokens: 5 } });
      const conf = provider.parseConf({ model: 'chat-model', baseURL: wire.baseURL, apiKey: 'k', compatibility, embeddingModel: model, dimensions: 2 });
      const result = await provider.embed(conf, { texts: ['alpha', 'beta'] });
      expect(result).toEqual({ embeddings: [[0.1, 0.2], [0.3, 0.4]], usage: { inputTokens: 5 } });
      const sent = wire.lastRequest('/embeddings')!;
      expect(sent.body).toMatchObject({ model, input: ['alpha', 'beta'], dimensions: 2 });
    }
    expect(await provider.embed(provider.parseConf({ model: 'm', baseURL: wire.baseURL }), { texts: [] })).toEqual({ embeddings: [], usage: { inputTokens: 0 } });
  });

  it('maps an embeddings 401 to ai_auth_failed', async () => {
    const locked = await new OpenAiWireServer({ apiKey: 'right' }).start();
    try {
      await expect(provider.embed(provider.parseConf({ model: 'm', baseURL: locked.baseURL, apiKey: 'wrong' }), { texts: ['a'] })).rejects.toMatchObject({ code: 'ai_auth_failed' });
    } finally {
      await locked.close();
    }
  });

  it('reports an unreachable server as ai_unavailable after retrying', async () => {
    const closed = await new OpenAiWireServer().start();
    const baseURL = closed.baseURL;
    await closed.close();
    const error = await collectParts(provider.chat(provider.parseConf({ model: 'm', baseURL }), { messages: [{ role: 'user', content: 'hi' }] })).catch((e: unknown) => e);
    expect((error as TrellisError).code).toBe('ai_unavailable');
  });

  it('parses conf: defaults, compatibility by base URL, required key for OpenAI', () => {
    expect(provider.parseConf({ model: 'gpt-4o-mini', apiKey: 'sk-1' })).toMatchObject({ compatibility: 'openai', baseURL: 'https://api.openai.com/v1', model: 'gpt-4o-mini' });
    expect(provider.parseConf({ model: 'deepseek-chat', baseURL: 'https://api.deepseek.com/v1/', apiKey: 'k' })).toMatchObject({ compatibility: 'compatible', baseURL: 'https://api.deepseek.com/v1' });
    expect(provider.parseConf({ model: 'qwen', baseURL: 'http://127.0.0.1:11434/v1' }).apiKey).toBeUndefined();
    expect(provider.secretConfKeys).toEqual(['apiKey']);
    const details = (conf: Record<string, unknown>) => {
      try {
        provider.parseConf(conf);
      } catch (error) {
        return (error as TrellisError).details;
      }
      return undefined;
    };
    expect(details({ apiKey: 'k' })).toEqual([expect.objectContaining({ field: 'conf.model', constraint: 'required' })]);
    expect(details({ model: 'gpt-4o' })).toEqual([expect.objectContaining({ field: 'conf.apiKey', constraint: 'required' })]);
    expect(details({ model: 'm', baseURL: 'ftp://x', apiKey: 'k' })).toEqual([expect.objectContaining({ field: 'conf.baseURL', constraint: 'isUrl' })]);
    expect(details({ model: 'm', baseURL: 'http://h/v1', temperature: 3, topP: 2, stop: 'END', compatibility: 'azure', headers: { a: 1 } })?.map((issue) => issue.field)).toEqual([
      'conf.compatibility',
      'conf.temperature',
      'conf.topP',
      'conf.stop',
      'conf.headers',
    ]);
    expect(details('nope' as never)?.[0]).toMatchObject({ field: 'conf', constraint: 'isObject' });
  });
});

describe('OpenAiWireServer answers non-streamed requests too', () => {
  it('returns a chat.completion with tool calls and usage', async () => {
    const wire = await new OpenAiWireServer().start();
    try {
      wire.enqueue({ text: ['Hi'], toolCalls: [{ id: 'c1', name: 'f', arguments: '{"a":1}' }], usage: { inputTokens: 3, outputTokens: 2 } });
      const response = await fetch(`${wire.baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', messages: [] }) });
      const body = (await response.json()) as any;
      expect(body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'Hi', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' });
      expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
      // Without a script it echoes the last user message.
      const echo = await fetch(`${wire.baseURL}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'ping' }] }) });
      expect(((await echo.json()) as any).choices[0].message.content).toBe('You said: ping');
    } finally {
      await wire.close();
    }
  });
});

const liveKey = process.env.TRELLIS_TEST_OPENAI_API_KEY;
describeProviderLive({
  name: 'OpenAiProvider',
  provider: () => new OpenAiProvider(),
  conf: liveKey
    ? { model: process.env.TRELLIS_TEST_OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: liveKey, ...(process.env.TRELLIS_TEST_OPENAI_BASE_URL ? { baseURL: process.env.TRELLIS_TEST_OPENAI_BASE_URL } : {}) }
    : undefined,
});

