import { s, type InferConfig } from '../../kernel/config/schema.js';

export const runsConfigSchema = s.object({
  defaultTimeoutSeconds: s.int().range(1, 86_400).default(300).describe('Timeout of a run that asks for none, in seconds.'),
  maxTimeoutSeconds: s
    .int()
    .range(1, 86_400)
    .default(900)
    .describe('Largest `timeout` a run may ask for, in seconds; a larger one is refused with 400 `timeout_too_large`. The default timeout is capped by it too.'),
  concurrency: s.int().range(1, 1_000).default(8).describe('Runs one process executes at once (the in-process queue, and each `trellis worker`).'),
  teamConcurrency: s
    .int()
    .range(1, 1_000)
    .orUndefined()
    .describe('Runs of one team the in-process queue executes at once; the team\'s further runs wait while other teams\' runs take the free slots (teams take turns). Default: three quarters of `concurrency` (at least 1), so one team cannot hold every slot.'),
  execute: s
    .boolean()
    .default(true)
    .describe('Whether this process executes queued runs. Set false on host processes of a deployment whose `trellis worker` processes execute them (BullMQ queue).'),
  shutdownGraceMs: s
    .int()
    .range(0, 600_000)
    .default(10_000)
    .describe('When the process stops, how long executing runs may go on before they are interrupted; an interrupted run continues from its last completed block in another process (or after a restart).'),
  onError: s.string()
    .oneOf(['stop', 'continue'] as const)
    .default('stop')
    .describe('What a run does after a block fails, for runs and blocks that do not say (`attrs.onError` on a block, `onError` in the run body).'),
  creditsPerRun: s.int().range(0, 1_000_000).default(1).describe('Credits a run costs on top of its model usage: reserved at start, charged when the run completes (or stops at an ask block), released when it fails, is cancelled or times out (docs/runs.md, "Credits").'),
  reservationTtlSeconds: s
    .int()
    .range(60, 30 * 86_400)
    .default(7 * 86_400)
    .describe('Lifetime of a run\'s credit reservation; covers runs waiting for an answer. An unsettled reservation is released after it.'),
  maxSubworkflowDepth: s
    .int()
    .range(1, 32)
    .default(5)
    .describe('How deep sub-workflow blocks may nest: a run at this depth (the top run is depth 0) cannot start another; its sub-workflow block fails with `subworkflow_depth_exceeded` (docs/runs.md, "Sub-workflows").'),
  maxToolRounds: s.int().range(1, 100).default(8).describe('Model turns an LLM block may take while it calls tools.'),
  codeTimeoutMs: s.int().range(10, 600_000).default(10_000).describe('Time limit of one code block (also bounded by the run\'s remaining time).'),
  codeMemoryBytes: s
    .int()
    .range(1024 * 1024, 2 * 1024 * 1024 * 1024)
    .default(64 * 1024 * 1024)
    .describe('Heap limit of one code block\'s sandbox.'),
  sandboxWorkers: s.int().range(1, 64).orUndefined().describe('Worker threads of the embedded code sandbox (default: the CPUs, at most 4).'),
  sandboxWorkersPerTeam: s
    .int()
    .range(1, 64)
    .orUndefined()
    .describe('Sandbox workers the code blocks of one team may hold at once; its further code blocks wait while other teams\' take the free workers (teams take turns; the wait counts against the run\'s timeout). Default: half of `sandboxWorkers` (at least 1).'),
  maxBlockEvents: s
    .int()
    .range(1, 100_000_000)
    .default(100_000)
    .describe('Output events (`block_chunk`, `tool_start`, `tool_result`) one block may emit; past it the block fails with `output_limit_exceeded`.'),
  maxBlockOutputBytes: s
    .int()
    .range(1, 2 ** 40)
    .default(16 * 1024 * 1024)
    .describe('Bytes of output (UTF-8 of the chunks\' text and of the tool results\' JSON) one block may emit; past it the block fails with `output_limit_exceeded`.'),
  maxRunEvents: s
    .int()
    .range(1, 100_000_000)
    .default(250_000)
    .describe('Output events all the blocks of a run may emit in one execution (a start, or a continuation after an answer or a lost worker); past it the block emitting fails with `output_limit_exceeded`.'),
  maxRunOutputBytes: s
    .int()
    .range(1, 2 ** 40)
    .default(64 * 1024 * 1024)
    .describe('Bytes of output all the blocks of a run may emit in one execution; past it the block emitting fails with `output_limit_exceeded`.'),
  flushIntervalMs: s
    .int()
    .range(1, 5_000)
    .default(20)
    .describe('Chunk events are written to the event log in rows of up to 2,000, as soon as that many wait and otherwise at most this old; other events go with the checkpoint or final record they belong to, and are at most 250 ms (or this, if longer) old.'),
  heartbeatSeconds: s.int().range(1, 3_600).default(10).describe('How often an executing run marks itself alive.'),
  staleAfterSeconds: s
    .int()
    .range(3, 86_400)
    .default(60)
    .describe('A running or queued run without a heartbeat for this long is taken as lost (its worker died): it is retried from its last completed block, or failed once `maxAttempts` is used.'),
  maxAttempts: s.int().range(1, 20).default(3).describe('Executions a run may start (the first plus retries after lost workers).'),
  idempotencyKeyHours: s
    .int()
    .range(1, 8_760)
    .default(24)
    .describe('How long an `Idempotency-Key` of a run start is kept: a POST that repeats it within this time attaches to the run it started instead of starting another.'),
  reaperIntervalMs: s.int().range(100, 3_600_000).default(15_000).describe('How often each process looks for lost runs.'),
});

export type RunsConfig = InferConfig<typeof runsConfigSchema>;
