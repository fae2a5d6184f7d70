import { aiWireServices, startAiWire, type WireRequest } from '@trellis/test-support';
import { describe, expect, it } from 'vitest';

// Every wire server answers the same scripted turn in its vendor's format; this checks the raw
// bytes with plain fetch (the adapters' own suites check them through the vendors' SDKs).
describe('startAiWire', () => {
  for (const service of aiWireServices) {
    it(`${service}: refuses a wrong key, records requests and echoes without a script`, async () => {
      const { wire, conf } = await startAiWire(service);
      try {
        const base = String(conf.baseURL);
        const path = { openai: '/chat/completions', anthropic: '/messages', gemini: '/models/gemini-2.5-flash:generateContent', dify: '/chat-messages' }[service];
        const body = {
          openai: { model: 'gpt-wire', messages: [{ role: 'user', content: 'ping' }] },
          anthropic: { model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'ping' }] },
          gemini: { contents: [{ role: 'user', parts: [{ text: 'ping' }] }] },
          dify: { query: 'ping', inputs: {}, user: 'u', response_mode: 'blocking' },
        }[service];
        const auth = (key: string): Record<string, string> =>
          ({ openai: { authorization: `Bearer ${key}` }, anthropic: { 'x-api-key': key }, gemini: { 'x-goog-api-key': key }, dify: { authorization: `Bearer ${key}` } })[service];
        const refused = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth('wrong') }, body: JSON.stringify(body) });
        expect([400, 401]).toContain(refused.status);
        const answered = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth(String(conf.apiKey)) }, body: JSON.stringify(body) });
        expect(answered.status).toBe(200);
        expect(await answered.text()).toContain('You said: ping');
        expect(wire.requests).toHaveLength(2);
        expect((wire.requests[1] as WireRequest).body).toEqual(body);
      } finally {
        await wire.close();
      }
    });
  }
});
