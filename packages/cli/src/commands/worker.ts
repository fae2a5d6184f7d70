import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { parsePositiveInt, withKernelOptions } from '../options.js';

interface WorkerFlags extends KernelFlags {
  concurrency?: number;
  migrate?: boolean;
}

export const workerCommand = {
  register(program: Command): void {
    withKernelOptions(program.command('worker').description('Execute queued workflow runs (BullMQ queue) until SIGINT/SIGTERM; serves no HTTP.'))
      .option('--concurrency <n>', 'runs executed at once (sets runs.concurrency)', parsePositiveInt)
      .option('--migrate', 'apply pending migrations before starting (default: leave them to `trellis start` or `trellis migrate`)')
      .addHelpText(
        'after',
        `
Needs adapters.queue "bullmq" and adapters.redisUrl: host processes (runs.execute false) accept runs
and stream their events, worker processes execute them. Prints one line on stdout once it takes
runs. SIGINT or SIGTERM stops taking runs, lets running ones finish for runs.shutdownGraceMs, then
interrupts them (another worker continues them from their last completed block).

Examples:
  trellis worker --database postgres://trellis@db/trellis --config trellis.config.json
  TRELLIS_CONFIG=trellis.config.json trellis worker --concurrency 16`,
      )
      .action((flags: WorkerFlags) => work(flags));
  },
};

async function work(flags: WorkerFlags): Promise<void> {
  const { createCliHost, withDatabaseContext } = await import('../kernel-runner.js');
  const { host, config, log } = await createCliHost(flags, {
    override: (input) => {
      const runs = ((input as Record<string, unknown>).runs ?? {}) as Record<string, unknown>;
      (input as Record<string, unknown>).runs = { ...runs, execute: true, ...(flags.concurrency ? { concurrency: flags.concurrency } : {}) };
    },
    precheck: async (validated) => {
      const adapters = (validated as unknown as { adapters?: { queue?: string } }).adapters;
      if (adapters?.queue !== 'bullmq') {
        throw new CliError('trellis worker needs adapters.queue "bullmq" (and adapters.redisUrl): with the in-process queue every host executes its own runs.', 2);
      }
    },
  });

  let signalled: NodeJS.Signals | undefined;
  let wake: () => void = () => undefined;
  const stopRequested = new Promise<void>((resolve) => (wake = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal: exiting without waiting for running runs');
      process.exit(1);
    }
    signalled = signal;
    log.info({ signal }, 'stopping: taking no more runs, letting running ones finish');
    wake();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await withDatabaseContext(host, () => host.kernel.start({ migrate: flags.migrate === true }));
    const runs = (config as unknown as { runs: { concurrency: number } }).runs;
    if (!signalled) {
      process.stdout.write(`Trellis worker is executing runs (pid ${process.pid}, concurrency ${runs.concurrency})\n`);
      await stopRequested;
    }
    await host.kernel.stop();
    log.info('stopped');
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
