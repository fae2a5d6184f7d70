import { aiProvidersServiceIdentifier, provide, type AiProvider } from '@trellis/core';
import { AnthropicProvider } from '@trellis/ai-anthropic';
import { DifyProvider } from '@trellis/ai-dify';
import { GeminiProvider } from '@trellis/ai-gemini';
import { OpenAiProvider } from '@trellis/ai-openai';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { createHost } from '@trellis/host';
import { collectParts, OpenAiWireServer, textOf } from '@trellis/test-support';
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
