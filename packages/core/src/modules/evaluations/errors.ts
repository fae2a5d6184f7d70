import { TrellisError } from '../../kernel/errors.js';

/** The errors of evaluations (docs/errors.md). */
export const evaluationErrors = {
  datasetNotFound: () => new TrellisError('not_found', 'dataset_not_found', 'No such dataset, or no access to its block.'),
  evaluationNotFound: () => new TrellisError('not_found', 'evaluation_not_found', 'No such evaluation, or no access to its block.'),
  tooManyCases: (max: number) =>
    new TrellisError('validation', 'dataset_too_large', `A dataset holds at most ${max} cases (evaluations.maxCases).`, { details: [{ field: 'cases', constraint: 'maxCases', message: `at most ${max} cases` }] }),
  emptyDataset: () => new TrellisError('validation', 'dataset_empty', 'The dataset has no cases: add some first (POST /datasets/{datasetId}/cases).', { details: [{ field: 'datasetId', constraint: 'cases', message: 'has no cases' }] }),
  blockMismatch: () =>
    new TrellisError('validation', 'dataset_block_mismatch', 'The dataset belongs to another block: evaluate a dataset with a version of its own block.', { details: [{ field: 'blockId', constraint: 'dataset', message: "is not the dataset's block" }] }),
  runNotUsable: (runId: string, why: string) =>
    new TrellisError('validation', 'run_not_usable', `Run ${runId} ${why}.`, { details: [{ field: 'fromRuns', constraint: 'run', message: `${runId} ${why}` }] }),
  casesOrRuns: () =>
    new TrellisError('validation', 'validation_failed', 'Send either `cases` or `fromRuns`, not both and not neither.', { details: [{ field: 'cases', constraint: 'oneOf', message: 'send cases or fromRuns' }] }),
  concurrencyTooHigh: (max: number) =>
    new TrellisError('validation', 'concurrency_too_high', `concurrency is at most ${max} (evaluations.maxConcurrency).`, { details: [{ field: 'concurrency', constraint: 'max', message: `at most ${max}` }] }),
  notComparable: (why: string) =>
    new TrellisError('validation', 'evaluations_not_comparable', `These evaluations cannot be compared: ${why}.`, { details: [{ field: 'candidate', constraint: 'comparable', message: why }] }),
  alreadyFinished: (status: string) => new TrellisError('conflict', 'evaluation_finished', `The evaluation is already ${status}.`),
};
