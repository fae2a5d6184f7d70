import type { Command } from 'commander';
import { billingCommand } from './billing.js';
import { doctorCommand } from './doctor.js';
import { initCommand } from './init.js';
import { migrateCommand } from './migrate.js';
import { oauthAppCommand } from './oauth-app.js';
import { openapiCommand } from './openapi.js';
import { schedulesCommand } from './schedules.js';
import { startCommand } from './start.js';
import { userCommand } from './user.js';
import { workerCommand } from './worker.js';

/**
 * Every `trellis` sub-command. A command file exports `register(program)`; add a line here.
 * Commands that need a kernel use `withKernel(flags, async (kernel) => ...)` from
 * `../kernel-runner.js` and the shared kernel flags from `../options.js`. Import the kernel
 * runner (and @trellis/core, @trellis/host) inside the action, `await import('../kernel-runner.js')`,
 * so that `trellis --help` and usage errors answer without loading the whole framework.
 */
export const commands: ReadonlyArray<{ register(program: Command): void }> = [
  initCommand,
  startCommand,
  migrateCommand,
  userCommand,
  oauthAppCommand,
  openapiCommand,
  doctorCommand,
  billingCommand,
  workerCommand,
  schedulesCommand,
];
