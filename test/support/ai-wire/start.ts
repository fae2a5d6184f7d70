import { AnthropicWireServer } from './anthropic.js';
import type { AiWireServer } from './common.js';
import { DifyWireServer, type DifyWireApp } from './dify.js';
import { GeminiWireServer } from './gemini.js';
import { OpenAiWireServer } from './openai.js';

/** The `service` names of the four provider adapters, one wire server each. */
export type AiWireService = 'openai' | 'anthropic' | 'gemini' | 'dify';
export const aiWireServices: readonly AiWireService[] = ['openai', 'anthropic', 'gemini', 'dify'];

export interface StartedAiWire {
  wire: AiWireServer;
  /** An AI model's `service` for this server. */
  service: AiWireService;
  /** An AI model's `conf` that points the service's adapter at this server (with its API key). */
  conf: Record<string, unknown>;
}

/**
 * Starts the wire server of `service` (accepting only `apiKey`, default `wire-key-<service>`) and
 * returns it with a model conf for the matching adapter. Dify plays a chatflow app (`app`) whose
 * workflow outputs carry scripted tool calls; Trellis tools reach it through `toolsInput: "tools"`.
 */
export async function startAiWire(service: AiWireService, options: { apiKey?: string; difyApp?: DifyWireApp } = {}): Promise<StartedAiWire> {
  const apiKey = options.apiKey ?? `wire-key-${service}`;
  switch (service) {
    case 'openai': {
      const wire = await new OpenAiWireServer({ apiKey }).start();
      return { wire, service, conf: { model: 'gpt-wire', baseURL: wire.baseURL, apiKey } };
    }
    case 'anthropic': {
      const wire = await new AnthropicWireServer({ apiKey }).start();
      return { wire, service, conf: { model: 'claude-haiku-4-5', baseURL: wire.baseURL, apiKey } };
    }
    case 'gemini': {
      const wire = await new GeminiWireServer({ apiKey }).start();
      return { wire, service, conf: { model: 'gemini-2.5-flash', baseURL: wire.baseURL, apiKey } };
    }
    case 'dify': {
      const wire = await new DifyWireServer({ apiKey, app: options.difyApp ?? 'chatflow' }).start();
      return { wire, service, conf: { baseURL: wire.baseURL, apiKey, toolsInput: 'tools' } };
    }
  }
}
