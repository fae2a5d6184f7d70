import { describe, expect, it } from 'vitest';
import { TrellisError } from '../../../kernel/errors.js';
import type { AiChatRequest, AiGateway, AiStreamPart } from '../../../ports/ai-provider.js';
import { runModelTurn, type ModelCallCredits, type ModelTurnInput } from './model-turn.js';

/** A gateway answering from a script: each model call takes the next list of parts. */
function scripted(calls: AiStreamPart[][], tool: (name: string) => unknown = () => ({ ok: true })) {
  const requests: AiChatRequest[] = [];
  const gateway: AiGateway = {
    async *chat({ request }) {
      requests.push({ ...request, messages: request.messages.slice() });
      const parts = calls.shift() ?? [];
      for (const part of parts) {
        request.signal?.throwIfAborted();
        await new Promise((resolve) => setImmediate(resolve));
        yield part;
      }
    },
    price: async (_model, usage) => usage.inputTokens + usage.outputTokens,
    estimate: async () => 100,
    toolDefinitions: async () => [{ name: 'weather', description: 'Weather', parameters: { type: 'object' } }],
    callTool: async ({ toolName }) => tool(toolName),
  };
  return { gateway, requests };
}

const finish = (inputTokens: number, outputTokens: number): AiStreamPart => ({ type: 'finish', finishReason: 'stop', usage: { inputTokens, outputTokens } });

function ledger(): ModelCallCredits<number> & { log: string[] } {
  const log: string[] = [];
  let next = 0;
  return {
    log,
    reserve: async (step) => (log.push(`reserve ${step}`), ++next),
    settle: async (hold, usage) => (log.push(`settle ${hold} ${usage.inputTokens}+${usage.outputTokens}`), Math.min(usage.inputTokens + usage.outputTokens, 100)),
    release: async (hold) => void log.push(`release ${hold}`),
  };
}

const base = (gateway: AiGateway, over: Partial<ModelTurnInput> = {}): ModelTurnInput => ({
  gateway,
  userId: 'u',
  modelId: 'm',
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  toolIds: ['t'],
  signal: new AbortController().signal,
  maxSteps: 3,
  runTools: true,
  sink: { text: () => undefined },
  ...over,
});

describe('runModelTurn', () => {
  it('does not call the provider when the turn was stopped while its step started', async () => {
    // Before: a stop during stepStart (a budget check reading the database) still called the
    // provider with an aborted signal; a provider that only listens for a later abort hung there.
    const { gateway, requests } = scripted([[{ type: 'text-delta', delta: 'late' }, finish(1, 1)]]);
    const stop = new AbortController();
    const credits = ledger();
    const turn = runModelTurn(base(gateway, { credits, signal: stop.signal, sink: { text: () => undefined, stepStart: async () => void stop.abort(new Error('stopped')) } }));
    await expect(turn).rejects.toThrow('stopped');
    expect(requests).toHaveLength(0);
    expect(credits.log).toEqual(['reserve 1', 'release 1']);
  });

  it('runs the tool calls, feeds their results back, and charges each call from its usage', async () => {
    const { gateway, requests } = scripted([[{ type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } }, finish(10, 2)], [{ type: 'text-delta', delta: 'Sun' }, { type: 'text-delta', delta: 'ny' }, finish(20, 3)]]);
    const credits = ledger();
    const shown: string[] = [];
    const outcome = await runModelTurn(base(gateway, { credits, sink: { text: (d) => void shown.push(d), toolResult: (call, result) => void shown.push(`${call.toolName}:${JSON.stringify(result)}`) } }));
    expect(outcome.status).toBe('completed');
    expect(outcome.text).toBe('Sunny');
    expect(outcome.steps.map((s) => s.credits)).toEqual([12, 23]);
    expect(shown).toEqual(['weather:{"ok":true}', 'Sun', 'ny']);
    expect(credits.log).toEqual(['reserve 1', 'settle 1 10+2', 'reserve 2', 'settle 2 20+3']);
    expect(requests[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('tells the model what a failed tool said, and only the code of an error it may not show', async () => {
    const { gateway, requests } = scripted(
      [[{ type: 'tool-call', toolCallId: 'c1', toolName: 'a', input: {} }, { type: 'tool-call', toolCallId: 'c2', toolName: 'b', input: {} }, finish(1, 1)], [finish(1, 1)]],
      (name) => {
        if (name === 'a') throw new TrellisError('unavailable', 'tool_call_failed', 'The endpoint answered 500.', { status: 502, expose: true });
        throw new Error('secret internals');
      },
    );
    await runModelTurn(base(gateway));
    const results = requests[1]!.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
    expect(results).toEqual([
      { error: 'tool_call_failed', message: 'The endpoint answered 500.' },
      { error: 'tool_failed', message: 'The tool failed.' },
    ]);
  });

  it('ends waiting_tool without running tools, and step_limit after maxSteps calls that all asked for tools', async () => {
    const call: AiStreamPart = { type: 'tool-call', toolCallId: 'c', toolName: 'weather', input: {} };
    const waiting = await runModelTurn(base(scripted([[call, finish(1, 1)]]).gateway, { runTools: false }));
    expect(waiting.status).toBe('waiting_tool');
    const limited = scripted([[call, finish(1, 1)], [call, finish(1, 1)], [call, finish(1, 1)]]);
    const outcome = await runModelTurn(base(limited.gateway, { maxSteps: 2 }));
    expect(outcome.status).toBe('step_limit');
    expect(limited.requests).toHaveLength(2);
  });

  it('charges a call cut by its signal from an estimate of what it used, and releases one that failed', async () => {
    const abort = new AbortController();
    const credits = ledger();
    const { gateway } = scripted([[{ type: 'text-delta', delta: 'It was a ' }, { type: 'text-delta', delta: 'dark night' }, finish(50, 50)]]);
    const cut = runModelTurn(base(gateway, { toolIds: [], credits, signal: abort.signal, sink: { text: () => abort.abort(new Error('stop')) } }));
    await expect(cut).rejects.toThrow('stop');
    // 'Weather in Paris?' is 17 characters (5 tokens), 'It was a ' 9 (3 tokens).
    expect(credits.log).toEqual(['reserve 1', 'settle 1 5+3']);

    const failing = ledger();
    const broken: AiGateway = { ...gateway, chat: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new TrellisError('unavailable', 'ai_unavailable', 'down')) }) }) };
    await expect(runModelTurn(base(broken, { toolIds: [], credits: failing }))).rejects.toThrow('down');
    expect(failing.log).toEqual(['reserve 1', 'release 1']);
  });

  it('holds the stream while the sink is behind', async () => {
    const { gateway } = scripted([[{ type: 'text-delta', delta: 'a' }, { type: 'text-delta', delta: 'b' }, finish(1, 1)]]);
    const order: string[] = [];
    await runModelTurn(
      base(gateway, {
        toolIds: [],
        sink: {
          text: (d) => {
            order.push(`got ${d}`);
            return new Promise<void>((resolve) => setTimeout(() => (order.push(`caught up ${d}`), resolve()), 5));
          },
        },
      }),
    );
    expect(order).toEqual(['got a', 'caught up a', 'got b', 'caught up b']);
  });
});
