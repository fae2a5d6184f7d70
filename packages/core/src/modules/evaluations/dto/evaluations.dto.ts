import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsInt, IsObject, IsOptional, IsString, IsUUID, Length, Matches, Max, Min, ValidateNested } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { evaluatorTypes } from '../services/evaluators.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const VERSION = /^\d{1,9}(\.\d{1,9}){0,2}$/;
// Any JSON value, with its types spelled out: the /docs page's OpenAPI validator (Scalar 1.46)
// rejects this schema's `expected` property when it has no `type` (docs-browser.int.spec.ts).
const anyJson = { description: 'Any JSON value.', type: ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] };

export class DatasetParams {
  @IsUUID('all')
  datasetId!: string;
}

export class EvaluationParams {
  @IsUUID('all')
  evaluationId!: string;
}

@Schema({ name: 'DatasetCaseInput' })
export class CaseBody {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'A name to tell the case by in results and comparisons.' })
  name?: string;

  @IsObject()
  @Doc({ description: 'The inputs of the run, by input name (checked against the deployment\'s inputs when the case runs).', schema: { type: 'object', additionalProperties: true } })
  inputs!: Record<string, unknown>;

  @IsOptional()
  @Doc({ description: 'What the output should be, for the evaluators that compare (exact, contains, numeric); any JSON value.', schema: anyJson })
  expected?: unknown;
}

@Schema({ name: 'CreateDatasetRequest' })
export class CreateDatasetBody {
  @Transform(trim)
  @IsString()
  @Length(1, 200)
  name!: string;

  @IsUUID('all')
  @Doc({ description: 'The block whose deployment the cases are for (the write permission in its project).' })
  blockId!: string;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => CaseBody)
  @Doc({ description: 'The first cases (more with POST /datasets/{datasetId}/cases).', nested: () => CaseBody })
  cases?: CaseBody[];
}

@Schema({ name: 'AddDatasetCasesRequest', description: 'Either `cases`, or `fromRuns` (and optionally `expectOutput`).' })
export class AddCasesBody {
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => CaseBody)
  @Doc({ description: 'Cases to add.', nested: () => CaseBody })
  cases?: CaseBody[];

  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @IsUUID('all', { each: true })
  @Doc({ description: 'Ids of earlier runs of the dataset\'s block: each becomes a case with that run\'s inputs.' })
  fromRuns?: string[];

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'With `fromRuns`: each run\'s output becomes the case\'s expectation (the runs must have completed).' })
  expectOutput?: boolean;
}

export class DatasetListQuery extends PageQuery {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'The datasets of this block (the read permission in its project); without it, the datasets you created.' })
  blockId?: string;
}

export class EvaluationListQuery extends PageQuery {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Only evaluations of this block.' })
  blockId?: string;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Only evaluations of this dataset.' })
  datasetId?: string;
}

export class CompareQuery {
  @IsUUID('all')
  @Doc({ description: 'The evaluation compared from (such as the current version\'s).' })
  base!: string;

  @IsUUID('all')
  @Doc({ description: 'The evaluation compared with it (such as a new version\'s), of the same dataset.' })
  candidate!: string;
}

const evaluatorSchema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', enum: [...evaluatorTypes] },
    path: { type: 'string', description: 'Which field of the output is judged: keys and array indexes separated by dots (`answer.items.0`). Absent: the whole output.' },
    weight: { type: 'number', minimum: 0, maximum: 1000, description: "The evaluator's share of the case's score (default 1)." },
    value: { description: '`exact`, `contains`, `numeric`: the expectation; absent: the case\'s `expected` (at `path` when it holds it).' },
    caseSensitive: { type: 'boolean', description: '`exact` (strings), `contains`: false compares without case (default true).' },
    pattern: { type: 'string', maxLength: 500, description: '`regex`: a JavaScript regular expression, tested against the value (text, or JSON text).' },
    flags: { type: 'string', description: '`regex`: any of i, m, s, u.' },
    schema: { type: 'object', description: '`jsonSchema`: the JSON Schema (draft 2020-12 or 07) the value must match (a string holding JSON is parsed first).' },
    tolerance: { type: 'number', minimum: 0, description: '`numeric`: the largest difference that passes (default 0).' },
    relative: { type: 'boolean', description: '`numeric`: the tolerance is a fraction of the expectation (0.05: 5 %).' },
    modelId: { type: 'string', format: 'uuid', description: '`judge`: the AI model that grades (one you can use, as in an LLM block).' },
    rubric: { type: 'string', maxLength: 4000, description: '`judge`: what a good output is; the model answers a score from 0 to 1 and a reason.' },
    threshold: { type: 'number', minimum: 0, maximum: 1, description: '`judge`: the lowest score that passes (default 0.5).' },
  },
};

@Schema({ name: 'CreateEvaluationRequest' })
export class CreateEvaluationBody {
  @IsUUID('all')
  datasetId!: string;

  @IsUUID('all')
  @Doc({ description: "The dataset's block (the write permission in its project: the runs spend its team's credits)." })
  blockId!: string;

  @IsString()
  @Matches(VERSION)
  @Doc({ description: 'The deployed version to run, such as `2`.', example: '1' })
  version!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsObject({ each: true })
  @Doc({ description: '1 to 20 evaluators; a case passes when all of them pass (docs/evaluations.md).', schema: { type: 'array', minItems: 1, maxItems: 20, items: evaluatorSchema } })
  evaluators!: Array<Record<string, unknown>>;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(256)
  @Doc({ description: 'Runs going on at once (default `evaluations.defaultConcurrency`, at most `evaluations.maxConcurrency`).' })
  concurrency?: number;
}
