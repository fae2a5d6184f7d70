/** The run responses and events, declared once: their JSON Schema (OpenAPI) and TypeScript types. */
import { dateTime, jsonObject, nullable, pageSchema, stringEnum, Type, uuid, type Static } from '../../kernel/http/response-schema.js';
import { runSources, runStatuses } from './entities/run.entity.js';

const failure = Type.Object({ code: Type.String(), message: Type.String() });

export const runSessionSchema = Type.Object(
  {
    blockId: Type.String(),
    blockType: Type.String(),
    blockName: Type.String(),
    status: stringEnum(['pending', 'running', 'completed', 'failed', 'waiting', 'skipped']),
    output: Type.String({ description: 'The output as text (JSON for other values).' }),
    error: Type.Optional(failure),
    console: Type.Optional(
      Type.Array(Type.Object({ level: Type.Optional(Type.String()), text: Type.Optional(Type.String()) }), { description: 'What a code block wrote to its console.' }),
    ),
    path: Type.Optional(
      Type.String({
        description:
          'Only on a block run inside a branch, loop or parallel block (one entry per iteration or branch): where it ran, as `loop[2]` or `group.branch`, nested `outer[1].inner.fast`.',
      }),
    ),
    iteration: Type.Optional(Type.Integer({ minimum: 0, description: 'Inside a loop or repeat block: the innermost iteration (from 0).' })),
    branch: Type.Optional(Type.String({ description: 'Inside a branch or parallel block: the innermost case or branch name.' })),
    parentRunId: Type.Optional(Type.String({ description: 'Reserved for blocks run by a sub-workflow: the run that started it.' })),
    attempts: Type.Optional(
      Type.Array(Type.Object({ attempt: Type.Integer(), code: Type.String(), message: Type.String() }), {
        description: 'Trellis addition: the failed attempts of a block with a failure policy (`retry`, `timeoutMs`, `fallback` attrs), in order.',
      }),
    ),
    fallback: Type.Optional(Type.Boolean({ description: 'Trellis addition: true when the output is the block\'s `fallback` (every attempt failed).' })),
    childRunId: Type.Optional(uuid({ description: 'Trellis addition: the run a sub-workflow block started.' })),
  },
  { description: 'The spec\'s Run session. status: pending, running, completed, failed, waiting, skipped (a `when` that did not hold).' },
);
export type RunSessionView = Static<typeof runSessionSchema>;

const ctxEntrySchema = Type.Object(
  { name: Type.String(), blockId: Type.String(), blockType: Type.String(), value: Type.Unknown() },
  { description: 'An input, a block output, or a text block\'s text, by name.' },
);

const runStatus = stringEnum(runStatuses);
const budgetShortfall = Type.Object(
  { scope: stringEnum(['run', 'deployment']), credits: Type.Integer(), spent: Type.Integer(), required: Type.Integer() },
  {
    description:
      'The budget a model call would have exceeded: `run` (the run\'s, or its root run\'s) or `deployment`; its credits, what was spent under it, and the credit hold of the call.',
  },
);
const waiting = nullable(
  Type.Object(
    {
      blockId: Type.String(),
      question: Type.String(),
      reason: Type.Optional(stringEnum(['budget'], { description: 'Trellis addition: `budget` for a budget wait; absent for an ask block.' })),
      budget: Type.Optional(budgetShortfall),
      path: Type.Optional(Type.String({ description: 'A budget wait inside a container: where the refused call was.' })),
    },
    { description: 'Why and where the run waits: without `reason`, for the answer to an ask block; `reason: "budget"`, for a budget to be raised (docs/runs.md, "Budgets").' },
  ),
);
const budgetField = nullable(
  Type.Object({ credits: Type.Integer() }, { description: 'Trellis addition: the run\'s budget (docs/runs.md, "Budgets"); null: none of its own.' }),
);

export const runResultSchema = Type.Object(
  {
    runId: uuid(),
    documentId: nullable(uuid()),
    status: runStatus,
    globalCtx: Type.Array(ctxEntrySchema),
    sessions: Type.Array(runSessionSchema),
    duration: Type.Integer({ description: 'Milliseconds since the run started.' }),
    timedOut: Type.Boolean(),
    output: Type.Optional(Type.Unknown({ description: 'The output block\'s value (an object by name with several output blocks).' })),
    error: Type.Optional(nullable(failure)),
    waiting: Type.Optional(waiting),
  },
  { description: 'With stream false: the run once it ended or paused at an ask block.' },
);
/** The 200 body of a run with `stream: false` (the spec's fields, plus status, output and error). */
export type RunResultView = Static<typeof runResultSchema>;

export const runEventSchema = Type.Object(
  {
    seq: Type.Integer(),
    type: Type.String(),
    path: Type.Optional(Type.String({ description: 'Block events inside a container: where the block ran (`loop[2]`, `group.branch`).' })),
    iteration: Type.Optional(Type.Integer({ minimum: 0, description: 'Block events inside a loop or repeat block: the innermost iteration.' })),
    branch: Type.Optional(Type.String({ description: 'Block events inside a branch or parallel block: the innermost case or branch.' })),
    parentRunId: Type.Optional(Type.String({ description: 'Reserved for sub-workflows: the run that started this one.' })),
    position: Type.Optional(Type.Integer({ minimum: 0, description: '`block_error` of an expression: the 0-based offset in the expression.' })),
  },
  {
    description:
      'One event. SSE: `id:` is seq, `event:` is type, `data:` the fields as JSON. NDJSON: one object per line with seq, type and the fields. Types: run_start, block_start, block_chunk, block_complete, block_end, block_error, tool_start, tool_result, run_waiting, run_error, run_complete (docs/runs.md). Block events of a block inside a branch, loop or parallel block add `path`, `iteration` and `branch` (docs/runs.md, "Control flow"); a `block_error` of an expression adds `position`.',
    additionalProperties: true,
  },
);

/** The SSE variant of a run's events (the frames are text; `runEventSchema` describes each one's fields). */
export const runEventStreamSchema = Type.String({ description: 'SSE frames `id: <seq>`, `event: <type>`, `data: <fields as JSON>`.' });

const modelUsage = Type.Object({ inputTokens: Type.Optional(Type.Integer()), outputTokens: Type.Optional(Type.Integer()), calls: Type.Optional(Type.Integer()) });

export const runRecordSchema = Type.Object({
  id: uuid(),
  documentId: nullable(uuid()),
  projectId: nullable(uuid()),
  userId: Type.Optional(uuid()),
  source: stringEnum(runSources),
  version: Type.Optional(nullable(Type.String())),
  status: runStatus,
  inputs: jsonObject({ additionalProperties: true }),
  sessions: Type.Array(runSessionSchema),
  globalCtx: Type.Optional(Type.Array(ctxEntrySchema)),
  output: Type.Unknown(),
  error: nullable(failure),
  waiting: Type.Optional(waiting),
  usage: Type.Object({
    // A map by model id: `Type.Record` would publish `patternProperties`, not the `additionalProperties` published here.
    models: Type.Optional(Type.Unsafe<Record<string, Static<typeof modelUsage>>>({ type: 'object', additionalProperties: modelUsage })),
    sandboxMs: Type.Optional(Type.Integer()),
  }),
  reservedCredits: Type.Optional(Type.Integer()),
  usedCredits: Type.Optional(nullable(Type.Integer())),
  timeout: Type.Optional(Type.Integer({ description: 'Seconds.' })),
  timedOut: Type.Boolean(),
  attempts: Type.Optional(Type.Integer()),
  parentRunId: Type.Optional(
    nullable(uuid({ description: 'Trellis addition: the run whose sub-workflow block started this run (null for a run started otherwise).' })),
  ),
  parentBlockId: Type.Optional(nullable(Type.String({ description: 'Trellis addition: the sub-workflow block of the parent run that started this run.' }))),
  depth: Type.Optional(Type.Integer({ description: 'Trellis addition: 0 for a run started otherwise, the parent\'s depth plus 1 for a sub-workflow\'s run.' })),
  budget: Type.Optional(budgetField),
  budgetRootRunId: Type.Optional(nullable(uuid({ description: 'Trellis addition: the run whose budget bounds this one (itself, or a sub-workflow\'s top run).' }))),
  startedAt: Type.Optional(nullable(dateTime())),
  finishedAt: Type.Optional(nullable(dateTime())),
  duration: Type.Optional(nullable(Type.Integer({ description: 'Milliseconds.' }))),
  createdAt: dateTime(),
  updatedAt: dateTime(),
});
export type RunView = Static<typeof runRecordSchema>;

export const runPageSchema = pageSchema(runRecordSchema);

export const runChildrenSchema = Type.Object({ items: Type.Array(runRecordSchema) });

export const runBudgetResultSchema = Type.Object({
  runId: uuid(),
  status: runStatus,
  budget: budgetField,
  resumed: Type.Array(uuid(), { description: 'The runs queued again by this change (this run and its sub-workflows\' runs that waited for the budget).' }),
});

/** The 202 of resume and cancel. */
export const runAcceptedSchema = Type.Object({ success: Type.Literal(true), runId: Type.String(), status: Type.String() });
