import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { parsePositiveInt, withKernelOptions } from '../options.js';

interface JsonFlags extends KernelFlags {
  json?: boolean;
}

interface ListFlags extends JsonFlags {
  block?: string;
  paused?: boolean;
  active?: boolean;
  limit?: number;
}

const out = (line: string) => process.stdout.write(`${line}\n`);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkId(what: string, id: string): void {
  if (!UUID.test(id)) throw new CliError(`${what}: "${id}" is not an id (UUID).`, 2);
}

export function register(program: Command): void {
  const schedules = program
    .command('schedules')
    .description('Operate the schedules of deployed blocks (every schedule, without permission checks).')
    .addHelpText(
      'after',
      `
Examples:
  trellis schedules list --block 0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f90
  trellis schedules pause 0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f91
  trellis schedules resume 0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f91
  trellis schedules delete 0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f91`,
    );

  withKernelOptions(schedules.command('list').description('List schedules, newest first.'))
    .option('--block <blockId>', 'only the schedules of this block')
    .option('--paused', 'only paused schedules')
    .option('--active', 'only schedules that are not paused')
    .option('-n, --limit <n>', 'how many (at most 100)', parsePositiveInt, 20)
    .option('--json', 'print { items, total } as JSON')
    .action((flags: ListFlags) => list(flags));

  for (const [name, paused, text] of [
    ['pause', true, 'Pause a schedule: no runs until it is resumed.'],
    ['resume', false, 'Resume a schedule; it counts from now (what fell due while paused does not run).'],
  ] as const) {
    withKernelOptions(schedules.command(name).argument('<scheduleId>', 'schedule id').description(text))
      .option('--json', 'print the schedule as JSON')
      .addHelpText('after', '\nExits 1 when there is no such schedule.')
      .action((id: string, flags: JsonFlags) => setPaused(id, paused, flags));
  }

  withKernelOptions(schedules.command('delete').argument('<scheduleId>', 'schedule id').description('Delete a schedule and the record of its due times (the runs stay).'))
    .addHelpText('after', '\nExits 1 when there is no such schedule.')
    .action((id: string, flags: KernelFlags) => remove(id, flags));
}

export const schedulesCommand = { register };

async function list(flags: ListFlags): Promise<void> {
  if (flags.block !== undefined) checkId('--block', flags.block);
  if (flags.paused && flags.active) throw new CliError('Give at most one of --paused and --active.', 2);
  const [{ ScheduleService, toScheduleView, MAX_PAGE_SIZE }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const paused = flags.paused ? true : flags.active ? false : undefined;
    const page = await kernel.get(ScheduleService).listAll(kernel.fork(), { blockId: flags.block, paused, size: Math.min(flags.limit ?? 20, MAX_PAGE_SIZE) });
    const views = page.items.map(toScheduleView);
    if (flags.json) return out(JSON.stringify({ items: views, total: page.total }, null, 2));
    for (const s of views) {
      const state = s.paused ? 'paused' : `next ${s.nextDueAt ?? '-'}`;
      out(`${s.id}  ${state.padEnd(30)} ${`${s.cron} (${s.timezone})`.padEnd(32)} block ${s.blockId}  ${s.name}`);
    }
    out(`${views.length} of ${page.total} schedule(s).`);
  });
}

async function setPaused(id: string, paused: boolean, flags: JsonFlags): Promise<void> {
  checkId('scheduleId', id);
  const [{ ScheduleService, toScheduleView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const schedule = await kernel.get(ScheduleService).setPausedById(kernel.fork(), id, paused);
    if (flags.json) return out(JSON.stringify(toScheduleView(schedule), null, 2));
    out(paused ? `Schedule ${id} is paused.` : `Schedule ${id} is active; next due ${toScheduleView(schedule).nextDueAt ?? '-'}.`);
  });
}

async function remove(id: string, flags: KernelFlags): Promise<void> {
  checkId('scheduleId', id);
  const [{ ScheduleService }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    await kernel.get(ScheduleService).deleteById(kernel.fork(), id);
    out(`Schedule ${id} is deleted.`);
  });
}
