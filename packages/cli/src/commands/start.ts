import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { withKernelOptions, withServerOptions } from '../options.js';
import { checkPortFree, describeBindFailure } from '../port-check.js';

interface StartFlags extends KernelFlags {
  migrate: boolean;
}

export const startCommand = {
  register(program: Command): void {
    withServerOptions(withKernelOptions(program.command('start').description('Start the Trellis host: apply pending migrations, listen, serve until SIGINT/SIGTERM.')))
      .option('--no-migrate', 'do not apply pending migrations at start (sets database.migrateOnStart to false)')
      .addHelpText(
        'after',
        `
Prints one line on stdout once listening: the URL and where the API docs are.
Logs go to stderr. SIGINT or SIGTERM stops gracefully (exit 0); a second signal exits at once.

Examples:
  trellis start
  trellis start --port 3000 --database postgres://trellis:secret@localhost:5432/trellis
  TRELLIS_PORT=0 TRELLIS_DATABASE=sqlite::memory: trellis start --transport node`,
      )
      .action((flags: StartFlags) => start(flags));
  },
};

async function start(flags: StartFlags): Promise<void> {
  const { createCliHost, withDatabaseContext } = await import('../kernel-runner.js');
  const { host, config, log } = await createCliHost(flags, {
    override: (input) => {
      if (flags.migrate === false) input.database = { ...input.database, migrateOnStart: false };
    },
    // A taken port is reported before the database is touched.
    precheck: async ({ server }) => {
      if (server.port === 0) return;
      const free = await checkPortFree(server.host, server.port);
      if (!free.ok) throw new CliError(describeBindFailure(server.host, server.port, free.code));
    },
  });
  const { host: address, port } = config.server;

  let signalled: NodeJS.Signals | undefined;
  let wake: () => void = () => undefined;
  const stopRequested = new Promise<void>((resolve) => (wake = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal: exiting without waiting for the graceful stop');
      process.exit(1);
    }
    signalled = signal;
    log.info({ signal }, 'stopping: refusing new connections and draining requests in flight');
    wake();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    try {
      await withDatabaseContext(host, () => host.start());
    } catch (error) {
      throw await explainStartFailure(error, address, port);
    }
    if (!signalled) {
      process.stdout.write(`Trellis is listening on ${host.url} (API docs: ${host.url}/docs)\n`);
      await stopRequested;
    }
    await host.stop();
    log.info('stopped');
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Turns a failed listen into a sentence that says what to do; other errors pass through. */
async function explainStartFailure(error: unknown, address: string, port: number): Promise<unknown> {
  const code = (error as NodeJS.ErrnoException).code;
  const listenFailed = (typeof code === 'string' && /^E(ADDRINUSE|ACCES|ADDRNOTAVAIL)$/.test(code)) || /could not listen/i.test((error as Error).message ?? '');
  if (!listenFailed) return error;
  if (code) return new CliError(describeBindFailure(address, port, code));
  // uWebSockets.js does not say why: ask the operating system.
  const probe = await checkPortFree(address, port);
  return new CliError(probe.ok ? `Cannot listen on ${address}:${port}: ${(error as Error).message}` : describeBindFailure(address, port, probe.code));
}
