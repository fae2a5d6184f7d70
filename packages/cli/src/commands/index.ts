import type { Command } from 'commander';

/**
 * Every `trellis` sub-command. A command file exports `register(program)`; add a line here.
 * Commands that need a kernel use `withKernel(flags, async (kernel) => ...)` from
 * `../kernel-runner.js` and the shared kernel flags from `../options.js`.
 */
export const commands: ReadonlyArray<{ register(program: Command): void }> = [];
