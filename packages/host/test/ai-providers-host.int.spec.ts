import { aiProvidersServiceIdentifier, provide, type AiMessage, type AiProvider, type AiStreamPart } from '@trellis/core';
import { AnthropicProvider } from '@trellis/ai-anthropic';
import { DifyProvider } from '@trellis/ai-dify';
import { GeminiProvider } from '@trellis/ai-gemini';
import { OpenAiProvider } from '@trellis/ai-openai';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { createHost } from '@trellis/host';
import { aiWireServices, collectParts, OpenAiWireServer, startAiWire, textOf, weatherTool } from '@trellis/test-support';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

const base = { auth: { jwtSecret: 'k'.repeat(32) }, server: { host: '127.0.0.1', port: 0, transport: 'node' as const } };

// The reference host installs the four AI provider adapters without configuration: an AI
// model's service picks one, its conf carries the settings.
describe('AI providers in the reference host', () => {
  it('binds openai, anthropic, gemini and dify, and the bound openai provider streams from a wire server', async () => {
    const host = createHost({ config: base, database: sqliteDatabase({ path: ':memory:' }), logger: pino({ level: 'silent' }) });
    const wire = await new OpenAiWireServer({ apiKey: 'sk-host' }).start();
    await host.start();
    try {
      const providers = host.kernel.get(aiProvidersServiceIdentifier);
      expect(providers.map((provider) => provider.service)).toEqual(['openai', 'anthropic', 'gemini', 'dify']);
      expect(providers[0]).toBeInstanceOf(OpenAiProvider);
      expect(providers[1]).toBeInstanceOf(AnthropicProvider);
      expect(providers[2]).toBeInstanceOf(GeminiProvider);
      expect(providers[3]).toBeInstanceOf(DifyProvider);
      const openai = providers[0];
      wire.enqueue({ text: ['Hello ', 'from the wire.'], usage: { inputTokens: 5, outputTokens: 4 } });
      const parts = await collectParts(openai.chat(openai.parseConf({ model: 'gpt-wire', baseURL: wire.baseURL, apiKey: 'sk-host' }), { messages: [{ role: 'user', content: 'hi' }] }));
      expect(textOf(parts)).toBe('Hello from the wire.');
      expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 5, outputTokens: 4 } });
    } finally {
      await host.stop();
      await wire.close();
    }
  });

  for (const service of aiWireServices) {
    it(`runs a tool loop (call, result, answer) through the bound ${service} provider against its wire server`, async () => {
      const host = createHost({ config: base, database: sqliteDatabase({ path: ':memory:' }), logger: pino({ level: 'silent' }) });
      const { wire, conf } = await startAiWire(service);
      await host.load(); // imports the installed adapter packages and binds them
      try {
        const provider = host.kernel.get(aiProvidersServiceIdentifier).find((candidate) => candidate.service === service)!;
        const parsed = provider.parseConf(conf);
        wire.enqueue({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: ['{"city":', '"Paris"}'] }], usage: { inputTokens: 20, outputTokens: 5 } }, { text: ['It is 21°C ', 'in Paris.'], usage: { inputTokens: 40, outputTokens: 7 } });
        const messages: AiMessage[] = [{ role: 'user', content: 'Weather in Paris?' }];
        const first = await collectParts(provider.chat(parsed, { messages, tools: [weatherTool], threadId: 'thread-1' }));
        const call = first.find((part) => part.type === 'tool-call') as Extract<AiStreamPart, { type: 'tool-call' }>;
        expect(call).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' } });
        expect(first.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 20, outputTokens: 5 } });
        messages.push({ role: 'assistant', content: '', toolCalls: [{ toolCallId: call.toolCallId, toolName: call.toolName, input: call.input }] });
        messages.push({ role: 'tool', toolCallId: call.toolCallId, toolName: call.toolName, content: '{"temperature":21}' });
        const second = await collectParts(provider.chat(parsed, { messages, tools: [weatherTool], threadId: 'thread-1' }));
        expect(textOf(second)).toBe('It is 21°C in Paris.');
        expect(second.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 40, outputTokens: 7 } });
        expect(wire.chatRequests).toHaveLength(2);
        expect(wire.chatRequests[1].rawBody).toMatch(/temperature\\?":21/);
      } finally {
        await host.kernel.stop();
        await wire.close();
      }
    });
  }

  it('lets an embedder replace the list', async () => {
    const custom: AiProvider = { service: 'echo', parseConf: (conf) => conf, async *chat() {} };
    const host = createHost({ config: base, database: sqliteDatabase({ path: ':memory:' }), logger: pino({ level: 'silent' }), adapters: [provide(aiProvidersServiceIdentifier, [custom])] });
    try {
      expect(host.kernel.get(aiProvidersServiceIdentifier)).toEqual([custom]);
    } finally {
      await host.kernel.stop();
    }
  });
});
