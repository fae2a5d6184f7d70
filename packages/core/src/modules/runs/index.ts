export { runsModule } from './runs.module.js';
export { runsConfigSchema, type RunsConfig } from './runs.config.js';
export { runsConfigServiceIdentifier } from './tokens.js';
export { Run, RunSchema, deploymentRunSources, runSources, runStatuses, type DeploymentRunSource, terminalRunStatuses, type RunSource, type RunStatus, type BlockSession, type BlockSessionStatus, type CtxEntry, type RunUsage } from './entities/run.entity.js';
export { RunEvent, RunEventSchema } from './entities/run-event.entity.js';
export { RunService, type StartRunInput, type StartedRun, type RunResult, type DocumentRunBody, type RunIdempotency } from './services/run.service.js';
export { InProcessRunQueue, type InProcessRunQueueOptions } from './services/in-process-run-queue.js';
export { RUN_CONTROL_TOPIC, RunControlChannel } from './services/run-control-channel.js';
export { eventData, followRun, followRunBatches, runEventsTopic, runControlTopic, type RunEventRecord, type RunEventText } from './services/event-log.js';
export { runReply, runResponseSpec, sseOf, ndjsonOf, sseFrames, ndjsonLines } from './routes.js';
export { toRunView } from './views.js';
export { runErrors, runFailure } from './errors.js';
export { blockNodeTypes, inputTypes, parseWorkflow, inputDefinitions, validateInputs, type BlockKind, type BuiltinBlockKind, type WorkflowBlock, type InputDefinition, type InputType } from './blocks/workflow.js';
export type { BlockExecutor, BlockIo, BlockOutcome } from './blocks/executor.js';
export { blockKindServiceIdentifier, defineBlockKind, type AttrIssue, type BlockKindDefinition, type BlockKindServices } from './blocks/kind.js';
export { attrIssue, optionalText } from './blocks/attrs.js';
export { BlockKinds } from './blocks/registry.js';
export { blockKindModule } from './blocks/module.js';
export { builtinBlockKinds } from './blocks/kinds/index.js';
export { renderTemplate, renderValue, renderDeep } from './blocks/template.js';
export { toolCallIdempotencyKey, blockToolCallKey, type ToolCallPlace } from './services/tool-effects.js';
export { runResultSchema, runRecordSchema, runPageSchema, runSessionSchema, runEventSchema } from './schemas.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { definitionsOf, runAs } from './block-routes.js';
export { deploymentInputDefinitions, inputsSchema } from './blocks/inputs.js';
export type {} from './hooks.js'; // its declaration merging
