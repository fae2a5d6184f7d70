export { evaluationsModule } from './evaluations.module.js';
export { evaluationsConfigSchema, type EvaluationsConfig } from './evaluations.config.js';
export { Dataset, DatasetCase } from './entities/dataset.entity.js';
export { Evaluation, EvaluationResult, evaluationStatuses, type EvaluationStatus, type EvaluationSummary } from './entities/evaluation.entity.js';
export { EvaluationRunner } from './services/evaluation-runner.js';
export { EvaluationService } from './services/evaluation.service.js';
export { DatasetService } from './services/dataset.service.js';
export { evaluatorTypes, type EvaluatorSpec, type EvaluatorScore } from './services/evaluators.js';
