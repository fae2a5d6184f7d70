import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that run for minutes (npm installs, many child processes, route walks), longest first.
 * Vitest orders files by the durations of its last run when it has them, else larger files
 * first; a fresh CI checkout has none, so a short file that runs long (the packaging test) would
 * start last and leave one worker busy while the others idle. These start first; vitest's own
 * order decides the rest. A file missing here only costs time, never a result.
 */
const longRunning = [
  'test/packaging.int.spec.ts',
  'packages/cli/test/start.int.spec.ts',
  'packages/host/test/conversations-adapters.int.spec.ts',
  'packages/host/test/robustness.int.spec.ts',
  'packages/cli/test/init.int.spec.ts',
  'packages/cli/test/worker.int.spec.ts',
  'packages/host/test/conversations-turns.int.spec.ts',
  'packages/host/test/runs-quotas.int.spec.ts',
  'packages/host/test/runs-loop-fault.int.spec.ts',
  'packages/cli/test/secrets.int.spec.ts',
  'packages/host/test/conversations-recovery.int.spec.ts',
  'packages/cli/test/user.int.spec.ts',
  'packages/cli/test/migrate.int.spec.ts',
];

export class LongRunningFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = longRunning.findIndex((path) => spec.moduleId.replaceAll('\\', '/').endsWith(`/${path}`));
      return index === -1 ? longRunning.length : index;
    };
    return sorted
      .map((spec, position) => ({ spec, position, rank: rank(spec) }))
      .sort((a, b) => a.rank - b.rank || a.position - b.position)
      .map(({ spec }) => spec);
  }
}
