import type { Command } from 'commander';

/** Adds the flags every kernel-booting command shares: --config and --database. */
export function withKernelOptions(command: Command): Command {
  return command
    .option('-c, --config <file>', 'configuration file (JSON or .js/.mjs); env TRELLIS_CONFIG')
    .option('-d, --database <url>', 'sqlite:<path>, sqlite::memory: or postgres://...; env TRELLIS_DATABASE');
}
