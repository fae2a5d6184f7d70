/** JSON Schemas of the run responses and events, for the OpenAPI document. */
import { runSources } from './entities/run.entity.js';
const dateTime = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const failure = { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } };

export const runSessionSchema = {
  type: 'object',
  description: 'The spec\'s Run session. status: pending, running, completed, failed, waiting, skipped (a `when` that did not hold).',
  required: ['blockId', 'blockType', 'blockName', 'status', 'output'],
  properties: {
    blockId: { type: 'string' },
    blockType: { type: 'string' },
    blockName: { type: 'string' },
    status: { enum: ['pending', 'running', 'completed', 'failed', 'waiting', 'skipped'] },
    output: { type: 'string', description: 'The output as text (JSON for other values).' },
    error: failure,
    console: { type: 'array', description: 'What a code block wrote to its console.', items: { type: 'object', properties: { level: { type: 'string' }, text: { type: 'string' } } } },
    path: { type: 'string', description: 'Only on a block run inside a branch, loop or parallel block (one entry per iteration or branch): where it ran, as `loop[2]` or `group.branch`, nested `outer[1].inner.fast`.' },
    iteration: { type: 'integer', minimum: 0, description: 'Inside a loop or repeat block: the innermost iteration (from 0).' },
    branch: { type: 'string', description: 'Inside a branch or parallel block: the innermost case or branch name.' },
    parentRunId: { type: 'string', description: 'Reserved for blocks run by a sub-workflow: the run that started it.' },
    attempts: {
      type: 'array',
      description: 'Trellis addition: the failed attempts of a block with a failure policy (`retry`, `timeoutMs`, `fallback` attrs), in order.',
      items: { type: 'object', required: ['attempt', 'code', 'message'], properties: { attempt: { type: 'integer' }, code: { type: 'string' }, message: { type: 'string' } } },
    },
    fallback: { type: 'boolean', description: 'Trellis addition: true when the output is the block\'s `fallback` (every attempt failed).' },
    childRunId: { type: 'string', format: 'uuid', description: 'Trellis addition: the run a sub-workflow block started.' },
  },
};

const ctxEntrySchema = {
  type: 'object',
  description: 'An input, a block output, or a text block\'s text, by name.',
  required: ['name', 'blockId', 'blockType', 'value'],
  properties: { name: { type: 'string' }, blockId: { type: 'string' }, blockType: { type: 'string' }, value: {} },
};

const runStatus = { enum: ['queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled'] };
const budgetShortfall = {
  type: 'object',
  description: 'The budget a model call would have exceeded: `run` (the run\'s, or its root run\'s) or `deployment`; its credits, what was spent under it, and the credit hold of the call.',
  required: ['scope', 'credits', 'spent', 'required'],
  properties: { scope: { enum: ['run', 'deployment'] }, credits: { type: 'integer' }, spent: { type: 'integer' }, required: { type: 'integer' } },
};
const waiting = nullable({
  type: 'object',
  description: 'Why and where the run waits: without `reason`, for the answer to an ask block; `reason: "budget"`, for a budget to be raised (docs/runs.md, "Budgets").',
  required: ['blockId', 'question'],
  properties: {
    blockId: { type: 'string' },
    question: { type: 'string' },
    reason: { enum: ['budget'], description: 'Trellis addition: `budget` for a budget wait; absent for an ask block.' },
    budget: budgetShortfall,
    path: { type: 'string', description: 'A budget wait inside a container: where the refused call was.' },
  },
});
const budgetField = nullable({ type: 'object', required: ['credits'], properties: { credits: { type: 'integer' } }, description: 'Trellis addition: the run\'s budget (docs/runs.md, "Budgets"); null: none of its own.' });

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
    'One event. SSE: `id:` is seq, `event:` is type, `data:` the fields as JSON. NDJSON: one object per line with seq, type and the fields. Types: run_start, block_start, block_chunk, block_complete, block_end, block_error, tool_start, tool_result, run_waiting, run_error, run_complete (docs/runs.md). Block events of a block inside a branch, loop or parallel block add `path`, `iteration` and `branch` (docs/runs.md, "Control flow"); a `block_error` of an expression adds `position`.',
  required: ['seq', 'type'],
  properties: {
    seq: { type: 'integer' },
    type: { type: 'string' },
    path: { type: 'string', description: 'Block events inside a container: where the block ran (`loop[2]`, `group.branch`).' },
    iteration: { type: 'integer', minimum: 0, description: 'Block events inside a loop or repeat block: the innermost iteration.' },
    branch: { type: 'string', description: 'Block events inside a branch or parallel block: the innermost case or branch.' },
    parentRunId: { type: 'string', description: 'Reserved for sub-workflows: the run that started this one.' },
    position: { type: 'integer', minimum: 0, description: '`block_error` of an expression: the 0-based offset in the expression.' },
  },
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
    source: { enum: [...runSources] },
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
    parentRunId: nullable({ type: 'string', format: 'uuid', description: 'Trellis addition: the run whose sub-workflow block started this run (null for a run started otherwise).' }),
    parentBlockId: nullable({ type: 'string', description: 'Trellis addition: the sub-workflow block of the parent run that started this run.' }),
    depth: { type: 'integer', description: 'Trellis addition: 0 for a run started otherwise, the parent\'s depth plus 1 for a sub-workflow\'s run.' },
    budget: budgetField,
    budgetRootRunId: nullable({ type: 'string', format: 'uuid', description: 'Trellis addition: the run whose budget bounds this one (itself, or a sub-workflow\'s top run).' }),
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

export const runBudgetResultSchema = {
  type: 'object',
  required: ['runId', 'status', 'budget', 'resumed'],
  properties: {
    runId: { type: 'string', format: 'uuid' },
    status: runStatus,
    budget: budgetField,
    resumed: { type: 'array', items: { type: 'string', format: 'uuid' }, description: 'The runs queued again by this change (this run and its sub-workflows\' runs that waited for the budget).' },
  },
};
