import { ContainerModule } from 'inversify';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { defineModule } from '../../kernel/module.js';
import { codeSandboxServiceIdentifier } from '../../ports/code-sandbox.js';
import { runQueueServiceIdentifier } from '../../ports/run-queue.js';
import { QuickJsCodeSandbox } from '../../sandbox/quickjs-code-sandbox.js';
import { documentScopes } from '../projects/index.js';
import { RunEventSchema } from './entities/run-event.entity.js';
import { RunSchema } from './entities/run.entity.js';
import { migrations } from './migrations/index.js';
import { deploymentBudgetsServiceIdentifier, projectRunsServiceIdentifier, type ProjectRunSummary } from '../blocks/index.js';
import { blockRunRoutes } from './block-routes.js';
import { blockKindServiceIdentifier } from './blocks/kind.js';
import { builtinBlockKinds } from './blocks/kinds/index.js';
import { BlockKinds } from './blocks/registry.js';
import { runRoutes } from './routes.js';
import { toRunView } from './views.js';
import { runsConfigSchema, type RunsConfig } from './runs.config.js';
import { InProcessRunQueue } from './services/in-process-run-queue.js';
import { RunService } from './services/run.service.js';
import { runsConfigServiceIdentifier } from './tokens.js';

/**
 * Runs: a document's top-level blocks executed as a workflow (input, LLM, code, tool, ask and
 * output blocks), with an event log that streams to any process, ask/resume, timeouts, credits,
 * and the RunQueue port (in process by default; BullMQ with `trellis worker` processes).
 */
export const runsModule = defineModule({
  name: 'runs',
  dependsOn: ['identity', 'billing', 'projects', 'documents', 'blocks'],
  config: runsConfigSchema,
  entities: [RunSchema, RunEventSchema],
  migrations,
  container: ({ section }) =>
    new ContainerModule(({ bind }) => {
      const config = section as RunsConfig;
      bind(runsConfigServiceIdentifier).toConstantValue(config);
      bind(runQueueServiceIdentifier).toConstantValue(
        new InProcessRunQueue({ concurrency: config.concurrency, teamConcurrency: config.teamConcurrency, closeGraceMs: config.shutdownGraceMs }),
      );
      // The embedded CodeSandbox (QuickJS in WebAssembly on worker threads, started when first used).
      bind(codeSandboxServiceIdentifier).toConstantValue(
        new QuickJsCodeSandbox({
          ...(config.sandboxWorkers ? { workers: config.sandboxWorkers } : {}),
          ...(config.sandboxWorkersPerTeam ? { workersPerTenant: config.sandboxWorkersPerTeam } : {}),
        }),
      );
      // Block kinds: the built-in ones here; any module may bind more (see blocks/module.ts).
      for (const kind of builtinBlockKinds) bind(blockKindServiceIdentifier).toConstantValue(kind);
      bind(BlockKinds)
        .toDynamicValue((context) => new BlockKinds(context.getAll(blockKindServiceIdentifier)))
        .inSingletonScope();
      bind(RunService).toSelf();
      bind(projectRunsServiceIdentifier).toDynamicValue((context) => {
        const runs = context.get(RunService);
        return {
          async list(em, projectId, page) {
            const { items, total } = await runs.listForProject(em, projectId, page);
            return { items: items.map((run) => toRunView(run) as ProjectRunSummary), total };
          },
        };
      });
      bind(deploymentBudgetsServiceIdentifier).toDynamicValue((context) => {
        const runs = context.get(RunService);
        return { changed: (blockId, before, after) => runs.deploymentBudgetChanged(blockId, before, after) };
      });
    }),
  routes: () => scopeRoutes([...runRoutes(), ...blockRunRoutes()], documentScopes),
  jobs: [
    {
      name: 'runs.recover-lost',
      intervalMs: (config) => (config as unknown as { runs: RunsConfig }).runs.reaperIntervalMs,
      async run(ctx) {
        const config = ctx.get(runsConfigServiceIdentifier);
        if (config.execute) await ctx.get(RunService).recoverLostRuns();
      },
    },
  ],
  async onStart(ctx) {
    const config = ctx.section as RunsConfig;
    if (config.execute) await ctx.get(RunService).consume();
  },
  async onStop(ctx) {
    await ctx.get(runQueueServiceIdentifier).close();
    const sandbox = ctx.get(codeSandboxServiceIdentifier) as { close?: () => Promise<void> };
    await sandbox.close?.();
  },
});
