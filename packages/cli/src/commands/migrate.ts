import type { Command } from 'commander';
import type { KernelFlags } from '../config-loader.js';
import { parsePositiveInt, withKernelOptions } from '../options.js';
import type { Kernel } from '@trellis/core';

interface MigrateFlags extends KernelFlags {
  steps?: number;
  json?: boolean;
}

export const migrateCommand = {
  register(program: Command): void {
    const migrate = program
      .command('migrate')
      .description('Apply, revert or list database migrations (every built-in module, in name order).')
      .addHelpText('after', '\nExamples:\n  trellis migrate status\n  trellis migrate up --database postgres://localhost/trellis\n  trellis migrate down --steps 2');

    withKernelOptions(migrate.command('status').description('List executed and pending migrations.'))
      .option('--json', 'print { executed, pending } as JSON')
      .action((flags: MigrateFlags) =>
        withMigrator(flags, async (kernel) => {
          const { executed, pending } = await kernel.migrate.status();
          if (flags.json) {
            out(JSON.stringify({ executed, pending }, null, 2));
            return;
          }
          for (const name of executed) out(`executed  ${name}`);
          for (const name of pending) out(`pending   ${name}`);
          out(`${executed.length} executed, ${pending.length} pending (${kernel.database.description}).`);
        }),
      );

    withKernelOptions(migrate.command('up').description('Apply every pending migration (all or nothing).')).action((flags: MigrateFlags) =>
      withMigrator(flags, async (kernel) => {
        const applied = await kernel.migrate.up();
        for (const name of applied) out(`applied   ${name}`);
        out(applied.length ? `Applied ${applied.length} migration(s).` : 'Nothing to apply: the database is up to date.');
      }),
    );

    withKernelOptions(migrate.command('down').description('Revert the most recent migrations (one unless --steps).'))
      .option('-s, --steps <n>', 'how many migrations to revert', parsePositiveInt, 1)
      .action((flags: MigrateFlags) =>
        withMigrator(flags, async (kernel) => {
          const reverted = await kernel.migrate.down({ steps: flags.steps ?? 1 });
          for (const name of reverted) out(`reverted  ${name}`);
          out(reverted.length ? `Reverted ${reverted.length} migration(s).` : 'Nothing to revert: no migration has been applied.');
        }),
      );
  },
};

/** Connects through the kernel's migrator only: modules are not started and nothing listens. */
async function withMigrator(flags: KernelFlags, work: (kernel: Kernel) => Promise<void>): Promise<void> {
  const { createCliHost, stopQuietly, withDatabaseContext } = await import('../kernel-runner.js');
  const { host, log } = await createCliHost(flags, { oneShot: true, secrets: 'read' });
  try {
    await withDatabaseContext(host, () => work(host.kernel));
  } finally {
    await stopQuietly(host.kernel, log);
  }
}

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}
