import { ContainerModule } from 'inversify';
import { scopeRoutes } from '../../kernel/auth/scopes.js';
import { defineModule } from '../../kernel/module.js';
import { documentScopes } from '../projects/index.js';
import { DatasetCaseSchema, DatasetSchema } from './entities/dataset.entity.js';
import { EvaluationResultSchema, EvaluationSchema } from './entities/evaluation.entity.js';
import { evaluationsConfigSchema, type EvaluationsConfig } from './evaluations.config.js';
import { migrations } from './migrations/index.js';
import { datasetRoutes } from './routes/dataset.routes.js';
import { evaluationRoutes } from './routes/evaluation.routes.js';
import { DatasetService } from './services/dataset.service.js';
import { EvaluationRunner } from './services/evaluation-runner.js';
import { EvaluationService } from './services/evaluation.service.js';
import { evaluationsConfigServiceIdentifier } from './tokens.js';

const configOf = (config: unknown) => (config as { evaluations: EvaluationsConfig }).evaluations;

/**
 * Evaluations: datasets of cases for a block, and evaluations that run a deployed version over
 * every case on the run queue, score the outputs, and compare two versions case by case.
 */
export const evaluationsModule = defineModule({
  name: 'evaluations',
  dependsOn: ['identity', 'ai', 'billing', 'projects', 'blocks', 'runs', 'triggers'],
  config: evaluationsConfigSchema,
  entities: [DatasetSchema, DatasetCaseSchema, EvaluationSchema, EvaluationResultSchema],
  migrations,
  container: ({ section }) =>
    new ContainerModule(({ bind }) => {
      bind(evaluationsConfigServiceIdentifier).toConstantValue(section as EvaluationsConfig);
      bind(DatasetService).toSelf().inSingletonScope();
      bind(EvaluationRunner).toSelf().inSingletonScope();
      bind(EvaluationService).toSelf().inSingletonScope();
    }),
  routes: () => scopeRoutes([...datasetRoutes(), ...evaluationRoutes()], documentScopes),
  jobs: [
    {
      name: 'evaluations.recover',
      intervalMs: (config) => Math.max(1_000, configOf(config).heartbeatSeconds * 1000),
      async run(ctx) {
        await ctx.get(EvaluationRunner).recover(ctx.em);
      },
    },
  ],
  async onStop(ctx) {
    await ctx.get(EvaluationRunner).stop();
  },
});
