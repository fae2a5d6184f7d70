import { TrellisError } from '../../kernel/errors.js';
import type { AiMessage, AiToolCall, AiToolDefinition } from '../../ports/ai-provider.js';

/** 400 `invalid_messages` naming the field at fault (`param` in OpenAI's error shape). */
const invalid = (field: string, message: string) =>
  new TrellisError('bad_request', 'invalid_messages', message, { details: [{ field, constraint: 'openaiMessage', message }] });

/** The text of a message's `content`: a string, or the `text` parts of an array (other parts are refused). */
function textOf(content: unknown, field: string, nullable = false): string {
  if (typeof content === 'string') return content;
  if ((content === null || content === undefined) && nullable) return '';
  if (Array.isArray(content)) {
    return content
      .map((part, i) => {
        const p = part as { type?: unknown; text?: unknown } | null;
        if (p?.type === 'text' && typeof p.text === 'string') return p.text;
        throw invalid(`${field}[${i}]`, 'Only text content parts are accepted.');
      })
      .join('');
  }
  throw invalid(field, 'content is text or an array of text parts.');
}

function toolCallsOf(value: unknown, field: string): AiToolCall[] {
  if (!Array.isArray(value)) throw invalid(field, 'tool_calls is an array.');
  return value.map((raw, i) => {
    const call = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (typeof call?.id !== 'string' || typeof call.function?.name !== 'string') throw invalid(`${field}[${i}]`, 'A tool call has an id and a function name.');
    let input: unknown = {};
    if (typeof call.function.arguments === 'string' && call.function.arguments.trim()) {
      try {
        input = JSON.parse(call.function.arguments);
      } catch {
        throw invalid(`${field}[${i}].function.arguments`, 'Tool call arguments are JSON text.');
      }
    }
    return { toolCallId: call.id, toolName: call.function.name, input };
  });
}

/** OpenAI chat messages in the AI port's terms (`developer` reads as `system`). */
export function toAiMessages(messages: readonly Record<string, unknown>[]): AiMessage[] {
  const names = new Map<string, string>();
  return messages.map((m, i) => {
    const field = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textOf(m.content, `${field}.content`) };
      case 'user':
        return { role: 'user', content: textOf(m.content, `${field}.content`) };
      case 'assistant': {
        const content = textOf(m.content, `${field}.content`, true);
        if (m.tool_calls === undefined || m.tool_calls === null) return { role: 'assistant', content };
        const toolCalls = toolCallsOf(m.tool_calls, `${field}.tool_calls`);
        for (const call of toolCalls) names.set(call.toolCallId, call.toolName);
        return { role: 'assistant', content, ...(toolCalls.length ? { toolCalls } : {}) };
      }
      case 'tool': {
        if (typeof m.tool_call_id !== 'string') throw invalid(`${field}.tool_call_id`, 'A tool message names the tool_call_id it answers.');
        return { role: 'tool', toolCallId: m.tool_call_id, toolName: names.get(m.tool_call_id) ?? 'tool', content: textOf(m.content, `${field}.content`) };
      }
      default:
        throw invalid(`${field}.role`, 'role is system, developer, user, assistant or tool.');
    }
  });
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** OpenAI `tools` (functions only) as the AI port's tool definitions. */
export function toAiTools(tools: readonly Record<string, unknown>[] | undefined): AiToolDefinition[] | undefined {
  if (!tools?.length) return undefined;
  return tools.map((raw, i) => {
    const fn = raw.function as { name?: unknown; description?: unknown; parameters?: unknown } | undefined;
    const field = `tools[${i}]`;
    if (raw.type !== 'function' || !fn || typeof fn.name !== 'string' || !TOOL_NAME.test(fn.name)) {
      throw new TrellisError('bad_request', 'invalid_tools', 'A tool is `{type: "function", function: {name, description?, parameters?}}` with a name of letters, digits, _ and -.', {
        details: [{ field, constraint: 'openaiTool', message: 'Not a function tool with a valid name.' }],
      });
    }
    const parameters = fn.parameters && typeof fn.parameters === 'object' ? (fn.parameters as Record<string, unknown>) : { type: 'object', properties: {} };
    return { name: fn.name, description: typeof fn.description === 'string' ? fn.description : '', parameters };
  });
}

/** The last user message's text (what a deployed block is asked). */
export function lastUserText(messages: readonly AiMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user') return m.content;
  }
  throw new TrellisError('bad_request', 'invalid_messages', 'A deployed block answers the last user message: send one.', {
    details: [{ field: 'messages', constraint: 'hasUserMessage', message: 'No user message.' }],
  });
}
