import { EntitySchema } from '@mikro-orm/core';
import { Block } from '../../blocks/index.js';
import { User } from '../../identity/index.js';

/**
 * A named set of cases for one block: each case holds the inputs a run of the block's deployment
 * gets and, optionally, what its output should be. Evaluations run a deployed version over every
 * case of a dataset.
 */
export class Dataset {
  id!: string;
  block!: Block;
  createdBy!: User;
  name!: string;
  caseCount!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const DatasetSchema = new EntitySchema<Dataset>({
  class: Dataset,
  tableName: 'eval_datasets',
  properties: {
    id: { type: 'uuid', primary: true },
    block: { kind: 'm:1', entity: () => Block, deleteRule: 'cascade', index: true },
    createdBy: { kind: 'm:1', entity: () => User, deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200 },
    caseCount: { type: 'integer' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});

/** One case of a dataset: the run's inputs, the expectation (or null), and the run it was taken from. */
export class DatasetCase {
  id!: string;
  dataset!: Dataset;
  name!: string | null;
  inputs!: Record<string, unknown>;
  expected!: unknown;
  sourceRunId!: string | null;
  createdAt!: Date;
}

export const DatasetCaseSchema = new EntitySchema<DatasetCase>({
  class: DatasetCase,
  tableName: 'eval_dataset_cases',
  properties: {
    id: { type: 'uuid', primary: true },
    dataset: { kind: 'm:1', entity: () => Dataset, deleteRule: 'cascade', index: true },
    name: { type: 'string', length: 200, nullable: true },
    inputs: { type: 'json' },
    expected: { type: 'json', nullable: true },
    sourceRunId: { type: 'uuid', nullable: true },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
  },
});
