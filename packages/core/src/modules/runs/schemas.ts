/** JSON Schemas of the run responses and events, for the OpenAPI document. */
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const failure = { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } };

export const runSessionSchema = {
  type: 'object',
  description: 'The spec\'s Run session. status: pending, running, completed, failed, waiting.',
  required: ['blockId', 'blockType', 'blockName', 'status', 'output'],
  properties: {
    blockId: { type: 'string' },
    blockType: { type: 'string' },
    blockName: { type: 'string' },
    status: { enum: ['pending', 'running', 'completed', 'failed', 'waiting', 'skipped'] },
    output: { type: 'string', description: 'The output as text (JSON for other values).' },
    error: failure,
    console: { type: 'array', description: 'What a code block wrote to its console.', items: { type: 'object', properties: { level: { type: 'string' }, text: { type: 'string' } } } },
  },
};

const ctxEntrySchema = {
  type: 'object',
  description: 'An input, a block output, or a text block\'s text, by name.',
  required: ['name', 'blockId', 'blockType', 'value'],
  properties: { name: { type: 'string' }, blockId: { type: 'string' }, blockType: { type: 'string' }, value: {} },
};

const runStatus = { enum: ['queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled'] };
const waiting = nullable({ type: 'object', required: ['blockId', 'question'], properties: { blockId: { type: 'string' }, question: { type: 'string' } } });

export const runResultSchema = {
  type: 'object',
  description: 'With stream false: the run once it ended or paused at an ask block.',
  required: ['runId', 'documentId', 'globalCtx', 'sessions', 'duration', 'timedOut', 'status'],
  properties: {
    runId: { type: 'string', format: 'uuid' },
    documentId: nullable({ type: 'string', format: 'uuid' }),
    status: runStatus,
    globalCtx: { type: 'array', items: ctxEntrySchema },
    sessions: { type: 'array', items: runSessionSchema },
    duration: { type: 'integer', description: 'Milliseconds since the run started.' },
    timedOut: { type: 'boolean' },
    output: { description: 'The output block\'s value (an object by name with several output blocks).' },
    error: nullable(failure),
    waiting,
  },
};

export const runEventSchema = {
  type: 'object',
  description:
    'One event. SSE: `id:` is seq, `event:` is type, `data:` the fields as JSON. NDJSON: one object per line with seq, type and the fields. Types: run_start, block_start, block_chunk, block_complete, block_end, block_error, tool_start, tool_result, run_waiting, run_error, run_complete (docs/runs.md).',
  required: ['seq', 'type'],
  properties: { seq: { type: 'integer' }, type: { type: 'string' } },
  additionalProperties: true,
};

export const runRecordSchema = {
  type: 'object',
  required: ['id', 'documentId', 'projectId', 'source', 'status', 'inputs', 'sessions', 'output', 'error', 'usage', 'timedOut', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    documentId: nullable({ type: 'string', format: 'uuid' }),
    projectId: nullable({ type: 'string', format: 'uuid' }),
    userId: { type: 'string', format: 'uuid' },
    source: { enum: ['document', 'block', 'test', 'api'] },
    version: nullable({ type: 'string' }),
    status: runStatus,
    inputs: { type: 'object', additionalProperties: true },
    sessions: { type: 'array', items: runSessionSchema },
    globalCtx: { type: 'array', items: ctxEntrySchema },
    output: {},
    error: nullable(failure),
    waiting,
    usage: {
      type: 'object',
      properties: {
        models: { type: 'object', additionalProperties: { type: 'object', properties: { inputTokens: { type: 'integer' }, outputTokens: { type: 'integer' }, calls: { type: 'integer' } } } },
        sandboxMs: { type: 'integer' },
      },
    },
    reservedCredits: { type: 'integer' },
    usedCredits: nullable({ type: 'integer' }),
    timeout: { type: 'integer', description: 'Seconds.' },
    timedOut: { type: 'boolean' },
    attempts: { type: 'integer' },
    startedAt: nullable(dateTime),
    finishedAt: nullable(dateTime),
    duration: nullable({ type: 'integer', description: 'Milliseconds.' }),
    createdAt: dateTime,
    updatedAt: dateTime,
  },
};

export const runPageSchema = {
  type: 'object',
  required: ['items', 'total', 'page', 'size'],
  properties: { items: { type: 'array', items: runRecordSchema }, total: { type: 'integer' }, page: { type: 'integer' }, size: { type: 'integer' } },
};
