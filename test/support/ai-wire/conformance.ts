import { NetworkGuard, type AiChatRequest, type AiProvider, type AiStreamPart, type TrellisError } from '@trellis/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loopbackHostForms, rebindingName, runRebinding } from '../net.js';
import type { AiWireServer } from './common.js';

/** Collects every part of a chat stream. */
export async function collectParts(stream: AsyncIterable<AiStreamPart>): Promise<AiStreamPart[]> {
  const parts: AiStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** Collects the parts until the stream fails; returns both. */
export async function collectUntilError(stream: AsyncIterable<AiStreamPart>): Promise<{ parts: AiStreamPart[]; error: unknown }> {
  const parts: AiStreamPart[] = [];
  try {
    for await (const part of stream) parts.push(part);
  } catch (error) {
    return { parts, error };
  }
  return { parts, error: undefined };
}

export const textOf = (parts: readonly AiStreamPart[]): string =>
  parts.map((part) => (part.type === 'text-delta' ? part.delta : '')).join('');

/** A tool offered in the suites: a weather lookup by city. */
export const weatherTool = {
  name: 'get_weather',
  description: 'The current weather of a city.',
  parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'], additionalProperties: false },
};

/** Retry options that keep suites fast: one retry, short backoff. */
export const fastRetry = { maxRetries: 1, baseDelayMs: 20, maxDelayMs: 5_000 };

export interface ProviderWireSuiteOptions {
  /** Suite title (`OpenAiProvider against the OpenAI wire format`). */
  name: string;
  /** A provider with the given retry policy. */
  provider: (retry: typeof fastRetry) => AiProvider<any>;
  /** A wire server that accepts `apiKey` only, started. */
  startWire: (apiKey: string) => Promise<AiWireServer>;
  /** The model conf pointing at `wire` with `apiKey`. */
  conf: (wire: AiWireServer, apiKey: string) => Record<string, unknown>;
  /** The vendor supports tools (function calls) offered per request. Default true. */
  tools?: boolean;
  /** The provider embeds (`embed`) on this wire: the network guard is checked on embeddings too. */
  embeddings?: boolean;
  /** The wire server sends `streamError` as an error event inside the stream. Default true. */
  streamErrorEvents?: boolean;
}

/**
 * Everything a logger could print of an error: message, stack and every enumerable field, down its
 * cause chain (what pino's error serialiser writes).
 */
export function everythingIn(error: unknown, seen = new Set<unknown>()): string {
  if (error === null || typeof error !== 'object' || seen.has(error)) return String(error);
  seen.add(error);
  const parts: string[] = [];
  if (error instanceof Error) parts.push(error.name, error.message, error.stack ?? '');
  for (const [key, value] of Object.entries(error)) {
    parts.push(key, value !== null && typeof value === 'object' ? everythingIn(value, seen) : String(value));
  }
  if (error instanceof Error && error.cause !== undefined) parts.push(everythingIn(error.cause, seen));
  return parts.join('\n');
}

const apiKey = 'wire-test-key-0123456789';

/**
 * The behaviour every AiProvider adapter must show against its vendor's wire format: streamed
 * text, streamed tool calls and their results, usage, the error vocabulary with retries before
 * the first part only, a cut stream and an abort.
 */
export function describeProviderOnWire(options: ProviderWireSuiteOptions): void {
  describe(options.name, () => {
    let wire: AiWireServer;
    let provider: AiProvider<any>;
    let conf: any;
    const chat = (request: Partial<AiChatRequest> & { messages?: AiChatRequest['messages'] }, overrides: Record<string, unknown> = {}) =>
      provider.chat(
        provider.parseConf({ ...options.conf(wire, apiKey), ...overrides }),
        { messages: [{ role: 'user', content: 'What is the weather in Paris?' }], ...request },
      );

    beforeAll(async () => {
      wire = await options.startWire(apiKey);
      provider = options.provider(fastRetry);
      conf = provider.parseConf(options.conf(wire, apiKey));
    });
    afterAll(async () => {
      await wire?.close();
    });
    beforeEach(() => {
      wire.reset();
    });

    it('streams text deltas in order, then one finish with the reported usage', async () => {
      wire.enqueue({ text: ['Sunny ', 'and ', 'warm.'], usage: { inputTokens: 17, outputTokens: 4 } });
      const parts = await collectParts(provider.chat(conf, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is the weather in Paris?' }] }));
      expect(parts.filter((part) => part.type === 'text-delta').map((part) => (part as { delta: string }).delta)).toEqual(['Sunny ', 'and ', 'warm.']);
      expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', usage: { inputTokens: 17, outputTokens: 4 } });
      expect(parts.filter((part) => part.type === 'finish')).toHaveLength(1);
      expect(wire.chatRequests).toHaveLength(1);
      expect(wire.chatRequests[0].rawBody).toContain('What is the weather in Paris?');
    });

    if (options.tools !== false) {
      it('streams a tool call whose arguments arrive in fragments, with the tool offered in the request', async () => {
        wire.enqueue({ toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: ['{"ci', 'ty":"Pa', 'ris"}'] }], usage: { inputTokens: 30, outputTokens: 9 } });
        const parts = await collectParts(chat({ tools: [weatherTool] }));
        const calls = parts.filter((part) => part.type === 'tool-call');
        expect(calls).toHaveLength(1);
        expect(calls[0]).toMatchObject({ type: 'tool-call', toolName: 'get_weather', input: { city: 'Paris' } });
        expect((calls[0] as { toolCallId: string }).toolCallId).toBeTruthy();
        expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'tool-calls', usage: { inputTokens: 30, outputTokens: 9 } });
        const sent = wire.chatRequests[0].rawBody;
        expect(sent).toContain('get_weather');
        expect(sent).toContain('City name');
      });

      it('sends the tool call and its result back in the next turn', async () => {
        wire.enqueue({ text: ['It is 21°C in Paris.'] });
        const parts = await collectParts(
          chat({
            tools: [weatherTool],
            messages: [
              { role: 'user', content: 'What is the weather in Paris?' },
              { role: 'assistant', content: '', toolCalls: [{ toolCallId: 'call_abc', toolName: 'get_weather', input: { city: 'Paris' } }] },
              { role: 'tool', toolCallId: 'call_abc', toolName: 'get_weather', content: '{"temperature":21,"unit":"C"}' },
            ],
          }),
        );
        expect(textOf(parts)).toBe('It is 21°C in Paris.');
        const sent = wire.chatRequests[0].rawBody;
        expect(sent).toContain('get_weather');
        expect(sent).toMatch(/temperature\\?":21/);
      });
    }

    it('maps 401 to ai_auth_failed without retrying, and never echoes the key', async () => {
      const { parts, error } = await collectUntilError(chat({}, { apiKey: 'wrong-key-9876543210' }));
      expect(parts).toEqual([]);
      expect((error as TrellisError).code).toBe('ai_auth_failed');
      expect((error as TrellisError).status).toBe(502);
      expect((error as Error).message).not.toContain('wrong-key-9876543210');
      expect(wire.chatRequests).toHaveLength(1);
    });

    it('retries a 429 after its retry-after, then answers ai_rate_limited with retry_after', async () => {
      wire.enqueue({ error: { status: 429, message: 'Slow down', headers: { 'retry-after': '1' } } }, { error: { status: 429, message: 'Slow down', headers: { 'retry-after': '1' } } });
      const started = Date.now();
      const { parts, error } = await collectUntilError(chat({}));
      expect(parts).toEqual([]);
      expect((error as TrellisError).code).toBe('ai_rate_limited');
      expect((error as TrellisError).status).toBe(429);
      expect((error as TrellisError).extra).toEqual({ retry_after: 1 });
      expect((error as TrellisError).headers).toEqual({ 'Retry-After': '1' });
      expect(wire.chatRequests).toHaveLength(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    });

    it('succeeds when the retry after a 429 is answered', async () => {
      wire.enqueue({ error: { status: 429, message: 'Slow down', headers: { 'retry-after': '0' } } }, { text: ['Fine.'] });
      const parts = await collectParts(chat({}));
      expect(textOf(parts)).toBe('Fine.');
      expect(wire.chatRequests).toHaveLength(2);
    });

    it('does not wait for a retry-after longer than the policy allows', async () => {
      wire.enqueue({ error: { status: 429, message: 'Quota', headers: { 'retry-after': '3600' } } });
      const { error } = await collectUntilError(chat({}));
      expect((error as TrellisError).code).toBe('ai_rate_limited');
      expect((error as TrellisError).extra).toEqual({ retry_after: 3600 });
      expect(wire.chatRequests).toHaveLength(1);
    });

    it('retries a 500, then answers ai_unavailable', async () => {
      wire.enqueue({ error: { status: 500, message: 'Internal failure' } }, { error: { status: 503, message: 'Overloaded' } });
      const { parts, error } = await collectUntilError(chat({}));
      expect(parts).toEqual([]);
      expect((error as TrellisError).code).toBe('ai_unavailable');
      expect((error as TrellisError).status).toBe(503);
      expect(wire.chatRequests).toHaveLength(2);
    });

    it('succeeds when the retry after a 500 is answered', async () => {
      wire.enqueue({ error: { status: 500, message: 'Internal failure' } }, { text: ['Recovered.'] });
      const parts = await collectParts(chat({}));
      expect(textOf(parts)).toBe('Recovered.');
      expect(wire.chatRequests).toHaveLength(2);
    });

    it('maps 400 to ai_bad_request with the vendor message', async () => {
      wire.enqueue({ error: { status: 400, message: 'The model does not exist' } });
      const { error } = await collectUntilError(chat({}));
      expect((error as TrellisError).code).toBe('ai_bad_request');
      expect((error as TrellisError).status).toBe(400);
      expect((error as Error).message).toContain('The model does not exist');
      expect(wire.chatRequests).toHaveLength(1);
    });

    it('fails a stream cut in the middle after its first deltas, without retrying', async () => {
      wire.enqueue({ text: ['One ', 'two ', 'three ', 'four ', 'five.'], cutAfter: 3 });
      const { parts, error } = await collectUntilError(chat({}));
      expect(parts.length).toBeGreaterThan(0);
      expect(parts.every((part) => part.type === 'text-delta')).toBe(true);
      expect((error as TrellisError).code).toBe('ai_unavailable');
      expect(wire.chatRequests).toHaveLength(1);
    });

    it('says a stream cut after it started was cut, not that the vendor could not be reached', async () => {
      wire.enqueue({ text: ['One ', 'two ', 'three ', 'four ', 'five.'], cutAfter: 3 });
      const { error } = await collectUntilError(chat({}));
      const message = (error as Error).message;
      expect(message).toMatch(/cut after it started/);
      expect(message).not.toMatch(/could not be reached/);
      expect(message).not.toMatch(/\b(\w+) \1\b/i);
    });

    if (options.streamErrorEvents !== false) {
      it("gives an error event inside the stream the vendor's words, and a rate limit its code", async () => {
        wire.enqueue({ text: ['Half'], streamError: { status: 500, message: 'The server had an error while processing your request.' } });
        const failed = await collectUntilError(chat({}));
        expect((failed.error as TrellisError).code).toBe('ai_unavailable');
        expect((failed.error as Error).message).toContain('The server had an error while processing your request.');
        expect((failed.error as Error).message).not.toContain('[object Object]');
        expect((failed.error as Error).message).not.toMatch(/\b(\w+) \1\b/i);

        wire.enqueue({ text: ['Half'], streamError: { status: 429, message: 'Rate limit reached for requests.' } });
        const limited = await collectUntilError(chat({}));
        expect((limited.error as TrellisError).code).toBe('ai_rate_limited');
        expect((limited.error as Error).message).toContain('Rate limit reached for requests.');
      });
    }

    it('keeps the key, header values and the conversation out of an error whose vendor echoes them', async () => {
      const headerSecret = 'hdr-secret-5551234567';
      const echo = `Incorrect API key provided: ${apiKey}; header ${headerSecret}`;
      wire.enqueue({ error: { status: 401, message: echo } }, { error: { status: 400, message: echo } });
      for (const code of ['ai_auth_failed', 'ai_bad_request']) {
        const { error } = await collectUntilError(chat({}, { headers: { 'x-team-token': headerSecret } }));
        expect((error as TrellisError).code).toBe(code);
        const all = everythingIn(error);
        expect(all).not.toContain(apiKey);
        expect(all).not.toContain(headerSecret);
        // The request body (the user's messages) is not kept with the error either.
        expect(all).not.toContain('What is the weather in Paris?');
      }
    });

    it('stops promptly when the signal aborts mid-stream', async () => {
      wire.enqueue({ text: ['One ', 'two ', 'three ', 'four.'], holdAfter: 3 });
      const controller = new AbortController();
      const parts: AiStreamPart[] = [];
      let caught: unknown;
      const reading = (async () => {
        try {
          for await (const part of chat({ signal: controller.signal })) parts.push(part);
        } catch (error) {
          caught = error;
        }
      })();
      await wire.held();
      // Let the client read what was sent before the hold.
      await new Promise((resolve) => setTimeout(resolve, 100));
      controller.abort();
      const started = Date.now();
      await reading;
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(caught).toBeInstanceOf(Error);
      expect((caught as Error).name).toBe('AbortError');
      expect(parts.some((part) => part.type === 'finish')).toBe(false);
      expect(wire.chatRequests).toHaveLength(1);
    });

    it('ends the HTTP request when the caller stops reading early', async () => {
      wire.enqueue({ text: ['One ', 'two ', 'three ', 'four.'], holdAfter: 2 });
      for await (const part of chat({})) {
        expect(part.type).toBe('text-delta');
        break;
      }
      await wire.held();
      for (let i = 0; i < 100 && wire.activeStreams > 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(wire.activeStreams).toBe(0);
    });

    describe('through the network guard (request.fetch)', () => {
      const refused = (error: unknown) => (error as TrellisError | undefined)?.code === 'destination_refused';
      /** The conf with the wire's host written as `host`. */
      const confAt = (host: string) => {
        const raw = options.conf(wire, apiKey);
        return provider.parseConf({ ...raw, baseURL: String(raw.baseURL).replace('127.0.0.1', host) });
      };
      const guarded = async <T>(allowPrivateNetworks: boolean | string[], work: (guard: NetworkGuard) => Promise<T>): Promise<T> => {
        const guard = new NetworkGuard({ allowPrivateNetworks });
        try {
          return await work(guard);
        } finally {
          await guard.close();
        }
      };

      it.each(loopbackHostForms)('refuses a baseURL at the loopback written %s with destination_refused, never retried', async (host) => {
        const { parts, error } = await guarded(false, (guard) => collectUntilError(provider.chat(confAt(host), { messages: [{ role: 'user', content: 'hi' }], fetch: guard.fetch })));
        expect(parts).toEqual([]);
        expect((error as TrellisError).code).toBe('destination_refused');
        expect((error as TrellisError).status).toBe(400);
        expect(wire.requests).toHaveLength(0);
        if (options.embeddings && provider.embed) {
          const embedError = await guarded(false, (guard) => provider.embed!(confAt(host), { texts: ['a'], fetch: guard.fetch })).catch((e: unknown) => e);
          expect((embedError as TrellisError).code).toBe('destination_refused');
          expect(wire.requests).toHaveLength(0);
        }
      });

      it('streams through an allowed guard', async () => {
        wire.enqueue({ text: ['Through ', 'the guard.'] });
        const parts = await guarded(['127.0.0.1'], (guard) => collectParts(provider.chat(conf, { messages: [{ role: 'user', content: 'hi' }], fetch: guard.fetch })));
        expect(textOf(parts)).toBe('Through the guard.');
        if (options.embeddings && provider.embed) {
          const result = await guarded(['127.0.0.1'], (guard) => provider.embed!(conf, { texts: ['a', 'b'], fetch: guard.fetch }));
          expect(result.embeddings).toHaveLength(2);
        }
      });

      it('holds when the baseURL host flips between an allowed and a refused address (DNS rebinding)', async () => {
        const port = Number(new URL(String(options.conf(wire, apiKey).baseURL)).port);
        const chatOutcome = await runRebinding(
          port,
          async (guard) => {
            wire.reset().enqueue({ text: ['ok'] });
            const parts = await collectParts(provider.chat(confAt(rebindingName), { messages: [{ role: 'user', content: 'hi' }], fetch: guard.fetch }));
            expect(textOf(parts)).toBe('ok');
          },
          { isRefusal: refused },
        );
        expect(chatOutcome.other).toEqual([]);
        expect(chatOutcome.trapHits).toBe(0);
        expect(chatOutcome.succeeded).toBeGreaterThan(0);
        expect(chatOutcome.refused).toBeGreaterThan(0);
        if (options.embeddings && provider.embed) {
          const embedOutcome = await runRebinding(
            port,
            async (guard) => {
              wire.reset();
              expect((await provider.embed!(confAt(rebindingName), { texts: ['a'], fetch: guard.fetch })).embeddings).toHaveLength(1);
            },
            { isRefusal: refused },
          );
          expect(embedOutcome.other).toEqual([]);
          expect(embedOutcome.trapHits).toBe(0);
          expect(embedOutcome.succeeded).toBeGreaterThan(0);
          expect(embedOutcome.refused).toBeGreaterThan(0);
        }
      });
    });

    it('validates conf with clear details and refuses unknown keys', () => {
      const bad = { ...options.conf(wire, apiKey), temperature: 'hot', maxTokens: 0, api_key: 'x' };
      try {
        provider.parseConf(bad);
        expect.unreachable('parseConf accepted a bad conf');
      } catch (error) {
        expect((error as TrellisError).code).toBe('invalid_model_conf');
        expect((error as TrellisError).status).toBe(422);
        const fields = ((error as TrellisError).details ?? []).map((issue) => issue.field);
        expect(fields).toEqual(expect.arrayContaining(['conf.temperature', 'conf.maxTokens', 'conf.api_key']));
      }
    });
  });
}

export interface LiveSuiteOptions {
  name: string;
  /** The live conf, or `undefined` when the environment gives no key (the suite is then skipped). */
  conf: Record<string, unknown> | undefined;
  provider: () => AiProvider<any>;
  tools?: boolean;
}

/** The same behaviours against the real service, run only when its key is set (reported as skipped otherwise). */
export function describeProviderLive(options: LiveSuiteOptions): void {
  describe(`${options.name} (live)`, () => {
    const skip = options.conf === undefined;
    it.skipIf(skip)('streams text and reports usage', async () => {
      const provider = options.provider();
      const parts = await collectParts(provider.chat(provider.parseConf(options.conf!), { messages: [{ role: 'user', content: 'Answer with the single word: pong' }], maxOutputTokens: 64 }));
      expect(textOf(parts).toLowerCase()).toContain('pong');
      const finish = parts.at(-1) as Extract<AiStreamPart, { type: 'finish' }>;
      expect(finish.type).toBe('finish');
      expect(finish.usage.inputTokens).toBeGreaterThan(0);
      expect(finish.usage.outputTokens).toBeGreaterThan(0);
    }, 60_000);
    if (options.tools !== false) {
      it.skipIf(skip)('calls a tool with parsed arguments', async () => {
        const provider = options.provider();
        const parts = await collectParts(
          provider.chat(provider.parseConf(options.conf!), { messages: [{ role: 'user', content: 'What is the weather in Paris? Use the tool.' }], tools: [weatherTool], maxOutputTokens: 256 }),
        );
        const call = parts.find((part) => part.type === 'tool-call') as Extract<AiStreamPart, { type: 'tool-call' }>;
        expect(call.toolName).toBe('get_weather');
        expect(String((call.input as { city: string }).city)).toMatch(/paris/i);
      }, 60_000);
    }
    it.skipIf(skip)('maps a wrong key to ai_auth_failed', async () => {
      const provider = options.provider();
      const { error } = await collectUntilError(provider.chat(provider.parseConf({ ...options.conf!, apiKey: 'invalid-key-for-trellis-tests' }), { messages: [{ role: 'user', content: 'ping' }] }));
      expect((error as TrellisError).code).toBe('ai_auth_failed');
    }, 60_000);
  });
}
