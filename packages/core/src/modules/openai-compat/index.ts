export { openAiCompatModule } from './openai-compat.module.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { startDeploymentRun } from './block-completion.js';
export { callerOf } from './caller.js';
export type { CompatCaller } from './caller.js';
export { callableBlocks } from './models.js';
