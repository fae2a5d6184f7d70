import { PageQuery, paging } from '../../kernel/http/dto/paging.js';
import { ModelCallReader, modelCallPageSchema, toModelCallView } from '../ai/index.js';
import { Reply } from '../../kernel/http/reply.js';
import { defineRoute, type RequestContext, type RouteDefinition, type RouteResponseSpec } from '../../kernel/http/route.js';
import { terminalRunStatuses } from './entities/run.entity.js';
import { combinedAuth, documentValidation } from '../documents/index.js';
import { DocumentRunBody, ResumeBody, RunBudgetBody, RunDocumentParams, RunEventsQuery, RunListQuery, RunParams } from './dto/run.dto.js';
import { runAcceptedSchema, runBudgetResultSchema, runChildrenSchema, runEventSchema, runEventStreamSchema, runPageSchema, runRecordSchema, runResultSchema } from './schemas.js';
import { perType, typeJson, type RunEventText } from './services/event-text.js';
import { RunService, type RunResult, type StartedRun } from './services/run.service.js';
import { toRunView } from './views.js';

const tags = ['Runs'];
const missing = 'No such document, or no access to it (document_not_found)';

/** `\nevent: <type>\ndata: `: the middle of an SSE frame. */
const sseMiddle = perType((type) => '\nevent: ' + type + '\ndata: ');

/** The SSE frames of a batch of events, as one string: `id:` is the sequence number, `event:` the type, `data:` the fields' JSON text as emitted. */
export function sseFrames(batch: readonly RunEventText[]): string {
  // `+` rather than a template literal: V8 builds these about twice as fast (a template with a
  // number in it goes through a slower path), and this runs for every event of every stream. The
  // type's part is one string per type: two pieces of rope fewer per event.
  let text = '';
  for (let i = 0; i < batch.length; i++) {
    const event = batch[i]!;
    text += 'id: ' + event.seq + sseMiddle(event.type) + event.json + '\n\n';
  }
  return text;
}

/**
 * The NDJSON lines of a batch of events, as one string: `{"seq":..,"type":..,<fields>}`. The
 * fields' JSON text is spliced in as emitted (a field named `seq` or `type` comes after, and wins
 * when parsed, as with `{ seq, type, ...fields }`).
 */
export function ndjsonLines(batch: readonly RunEventText[]): string {
  let text = '';
  for (let i = 0; i < batch.length; i++) {
    const event = batch[i]!;
    const json = event.json;
    text += '{"seq":' + event.seq + ',"type":' + typeJson(event.type) + (json.length > 2 ? ',' + json.slice(1) : '}') + '\n';
  }
  return text;
}

/**
 * SSE of run events: one buffer, and one write, per batch of events. Encoded here, once: the
 * transports write bytes as they are, and the HTTP metrics take their length as it is (a string
 * would be scanned for its UTF-8 length there and encoded again by the transport).
 */
export function sseOf(batches: AsyncIterable<readonly RunEventText[]>): Reply {
  async function* frames() {
    for await (const batch of batches) if (batch.length) yield Buffer.from(sseFrames(batch), 'utf8');
  }
  return Reply.stream(frames(), 'text/event-stream; charset=utf-8', { 'x-accel-buffering': 'no' });
}

/** NDJSON of run events: one buffer, and one write, per batch of events (as `sseOf`). */
export function ndjsonOf(batches: AsyncIterable<readonly RunEventText[]>): Reply {
  async function* lines() {
    for await (const batch of batches) if (batch.length) yield Buffer.from(ndjsonLines(batch), 'utf8');
  }
  return Reply.stream(lines(), 'application/x-ndjson');
}

/**
 * The HTTP answer of a started run, shared by the document run route and the Block API's run
 * routes: a stream of its events (SSE or NDJSON), or with `stream: false` its result once it ends.
 * The client going away does not stop the run.
 */
export async function runReply(started: StartedRun, options: { stream?: boolean; format?: 'sse' | 'ndjson' }): Promise<RunResult | Reply> {
  if (options.stream === false) return started.result();
  const batches = started.batches(0);
  return options.format === 'ndjson' ? ndjsonOf(batches) : sseOf(batches);
}

/** `Last-Event-ID` as a sequence number (0 without one, or for a malformed one). */
export function lastEventIdOf(headers: Readonly<Record<string, string>>): number {
  const header = headers['last-event-id'];
  return header !== undefined && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : 0;
}

/**
 * `runReply` for a run start that may have attached to an earlier run (a repeated
 * `Idempotency-Key`): a client library retrying the POST with `Last-Event-ID` gets the events
 * after it, or 204 once the run ended and it has them all. A run this request started streams
 * from its first event.
 */
export async function startReply(ctx: { headers: Readonly<Record<string, string>>; signal?: AbortSignal; get: RequestContext['get'] }, started: StartedRun, options: { stream?: boolean; format?: 'sse' | 'ndjson' }): Promise<RunResult | Reply> {
  const after = started.attached ? lastEventIdOf(ctx.headers) : 0;
  if (after === 0 || options.stream === false) return runReply(started, options);
  const runs = ctx.get(RunService);
  const run = await runs.attachedStatus(started.runId);
  if (run && terminalRunStatuses.has(run) && (await runs.delivered(started.runId, after))) return Reply.empty(204);
  return runReply({ ...started, batches: () => started.batches(after, ctx.signal) }, options);
}

/** The OpenAPI description of a run response (JSON with stream false, SSE or NDJSON otherwise). */
export const runResponseSpec: RouteResponseSpec<typeof runResultSchema> = {
  status: 200,
  description: 'stream true (default): the run\'s events as text/event-stream (format sse) or application/x-ndjson (format ndjson); stream false: the result as JSON.',
  schema: runResultSchema,
  mediaTypes: [
    { contentType: 'text/event-stream', schema: runEventStreamSchema },
    { contentType: 'application/x-ndjson', schema: runEventSchema },
  ],
};

/** `runResponseSpec` of the run starts that take an `Idempotency-Key` (see `startReply`). */
export const startResponseSpec: RouteResponseSpec<typeof runResultSchema> = {
  ...runResponseSpec,
  alternatives: [{ status: 204, description: 'A repeated Idempotency-Key with Last-Event-ID at or past the last event of the finished run it attaches to: nothing more to send.' }],
};

const streamResponse: RouteResponseSpec<typeof runEventStreamSchema> = {
  status: 200,
  description: 'The events after the given sequence number, then the live tail until run_complete (or run_waiting while the run waits).',
  contentType: 'text/event-stream',
  schema: runEventStreamSchema,
  mediaTypes: [{ contentType: 'application/x-ndjson', schema: runEventSchema }],
  alternatives: [{ status: 204, description: 'The run ended and the client has all its events (Last-Event-ID or `after` at or past the last one): an EventSource stops reconnecting.' }],
};

export function runRoutes(): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/run',
      summary: 'Run a document: its top-level blocks, top to bottom, with streamed events',
      description:
        'JWT only. Needs the execute permission. Reserves credits from the project\'s team before it starts. Events carry sequence numbers (SSE `id:`, NDJSON `seq`); a dropped stream continues with `GET /documents/{documentId}/runs/{runId}/events`. Disconnecting does not stop the run. With an `Idempotency-Key` header, a repeated request (same caller, same key, within `runs.idempotencyKeyHours`) attaches to the run the first one started: its events from the start, or its result. See docs/runs.md.',
      tags,
      auth: ['jwt'],
      params: RunDocumentParams,
      body: DocumentRunBody,
      validationError: documentValidation,
      response: startResponseSpec,
      errors: {
        400: 'Inputs fail the input blocks (invalid_inputs, with details); debug content is not document JSON (invalid_content); a block is not valid (invalid_workflow); timeout above the maximum (timeout_too_large); the project has no team (no_team_associated); bad body (validation_failed); malformed Idempotency-Key (invalid_idempotency_key)',
        402: 'Too few credits (insufficient_credits, with balance, required and shortfall)',
        403: 'Not a JWT (credential_not_allowed), or no execute permission (execute_permission_required)',
        404: missing,
        422: 'The Idempotency-Key was used for another request (idempotency_key_reused)',
        500: 'The credit balance could not be checked (balance_check_failed)',
      },
      async handler(ctx) {
        const body = ctx.body ?? {};
        const started = await ctx.get(RunService).startDocumentRun(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, body, ctx.headers['idempotency-key']);
        return startReply(ctx, started, body);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/runs',
      summary: 'List the runs of a document, newest first',
      tags,
      auth: combinedAuth,
      params: RunDocumentParams,
      query: RunListQuery,
      validationError: documentValidation,
      response: { schema: runPageSchema },
      errors: { 404: missing },
      async handler(ctx) {
        const page = await ctx.get(RunService).listForDocument(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, paging(ctx.query));
        return { ...page, items: page.items.map(toRunView) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/runs/:runId',
      summary: 'Read a run: status, inputs, sessions, output, error, usage, timings',
      tags,
      auth: combinedAuth,
      params: RunParams,
      response: { schema: runRecordSchema },
      errors: { 404: `${missing}; no such run of this document (run_not_found)` },
      async handler(ctx) {
        return toRunView(await ctx.get(RunService).get(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/runs/:runId/children',
      summary: 'List the runs a run\'s sub-workflow blocks started',
      description:
        'Trellis addition (docs/runs.md, "Sub-workflows"): the child runs of this run, oldest first, each with `parentRunId` and `parentBlockId`. A child\'s own children are listed the same way from the child (its `documentId` is the deployed block\'s). Read permission on the parent\'s document.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      response: { schema: runChildrenSchema },
      errors: { 404: `${missing}; no such run of this document (run_not_found)` },
      async handler(ctx) {
        const children = await ctx.get(RunService).children(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId);
        return { items: children.map(toRunView) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/runs/:runId/events',
      summary: 'Replay a run\'s events and follow it live (reconnect with Last-Event-ID or ?after=)',
      description:
        'Answers the events whose sequence number is above `Last-Event-ID` (or `after`, default 0: the whole log), each exactly once, then the live tail from whichever process executes the run. Ends after run_complete, or at run_waiting while the run waits for an answer. A finished run replays its whole log; once the client has all of it (`Last-Event-ID` or `after` at or past its last event) the answer is 204, so an EventSource stops reconnecting.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      query: RunEventsQuery,
      validationError: documentValidation,
      response: streamResponse,
      errors: { 404: `${missing}; no such run of this document (run_not_found)` },
      async handler(ctx) {
        const fromHeader = ctx.headers['last-event-id'] !== undefined ? lastEventIdOf(ctx.headers) : undefined;
        const after = fromHeader ?? ctx.query.after ?? 0;
        const events = await ctx.get(RunService).events(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId, after, ctx.signal);
        // Nothing more will come: 204 tells an EventSource to stop reconnecting.
        if (!events) return Reply.empty(204);
        return ctx.query.format === 'ndjson' ? ndjsonOf(events) : sseOf(events);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/documents/:documentId/runs/:runId/model-calls',
      summary: 'List the model calls of a run, oldest first',
      description:
        'The AI provider calls the run\'s blocks made, from every attempt (a call made by an attempt that was lost is listed, with `attempt`, and charged once): the model, the block, the messages and tool definitions sent (unless `ai.records.messageBodies` is off), the tool calls returned, the tokens the provider reported, the credits, the latencies, retries and the status. Readable by whoever may read the run. Records are kept for `ai.records.retentionDays` days. See docs/observability.md.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      query: PageQuery,
      validationError: documentValidation,
      response: { schema: modelCallPageSchema },
      errors: { 404: `${missing}; no such run of this document (run_not_found)` },
      async handler(ctx) {
        const run = await ctx.get(RunService).get(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId);
        const page = await ctx.get(ModelCallReader).forRun(ctx.em, run.id, paging(ctx.query));
        return { ...page, items: page.items.map(toModelCallView) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/runs/:runId/resume',
      summary: 'Resume a run after an Ask interruption (only enqueues the continuation)',
      description: 'The answer becomes the ask block\'s output; the continuation streams on the run\'s event stream (`GET .../events` with Last-Event-ID). Answers at once with 202.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      body: ResumeBody,
      validationError: documentValidation,
      response: { status: 202, schema: runAcceptedSchema },
      errors: {
        403: 'No execute permission (execute_permission_required)',
        404: `${missing}; no such run of this document (run_not_found)`,
        409: 'The run is not waiting for an answer (run_not_waiting); it waits for a budget, not an answer (run_waiting_for_budget)',
      },
      async handler(ctx) {
        const run = await ctx.get(RunService).resume(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId, ctx.body?.answer);
        return { success: true as const, runId: run.id, status: run.status };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/runs/:runId/budget',
      summary: "Set a run's budget in credits (raising it resumes a run waiting for it)",
      description:
        'Sets the budget of a queued, running or budget-waiting run (docs/runs.md, "Budgets"); `credits: null` clears it. Raising or clearing it queues again the run and its sub-workflows\' runs that wait for it: each continues from its last checkpoint, nothing completed runs again, and the continuation streams on the run\'s event stream. Lowering it makes the run wait at its next model call that would exceed it.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      body: RunBudgetBody,
      validationError: documentValidation,
      response: { schema: runBudgetResultSchema },
      errors: {
        400: 'credits is missing, or not null nor a whole number from 0 to 2000000000 (validation_failed)',
        403: 'No write permission on the document (write_permission_required)',
        404: `${missing}; no such run of this document (run_not_found)`,
        409: "The run already ended (run_finished); it waits for an answer to an ask block (run_waiting_for_input); it is a sub-workflow's run, bounded by its root run's budget (run_budget_inherited)",
      },
      async handler(ctx) {
        const { run, resumed } = await ctx.get(RunService).setBudget(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId, ctx.body.credits);
        return { runId: run.id, status: run.status, budget: run.budgetCredits === null ? null : { credits: run.budgetCredits }, resumed };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/documents/:documentId/runs/:runId/cancel',
      summary: 'Cancel a run (queued, running or waiting)',
      description: 'A running run stops its current block in whichever process executes it and ends with run_error `run_cancelled` and run_complete; its credits are released.',
      tags,
      auth: combinedAuth,
      params: RunParams,
      response: { status: 202, schema: runAcceptedSchema },
      errors: {
        403: 'No execute permission (execute_permission_required)',
        404: `${missing}; no such run of this document (run_not_found)`,
        409: 'The run already ended (run_finished)',
      },
      async handler(ctx) {
        const run = await ctx.get(RunService).cancel(ctx.em, ctx.requirePrincipal(), ctx.params.documentId, ctx.params.runId);
        return { success: true as const, runId: run.id, status: run.status };
      },
    }),
  ];
}
