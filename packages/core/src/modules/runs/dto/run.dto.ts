import { Transform } from 'class-transformer';
import { IsBoolean, IsDefined, IsIn, IsInt, IsObject, IsOptional, IsUUID, Max, Min, ValidateIf } from 'class-validator';
import { Doc, Nested, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { BudgetDto, MAX_BUDGET } from '../../blocks/index.js';

export class RunDocumentParams {
  @IsUUID('all')
  documentId!: string;
}

export class RunParams {
  @IsUUID('all')
  documentId!: string;

  @IsUUID('all')
  runId!: string;
}

export const budgetDoc = {
  nullable: true,
  description:
    'Trellis addition: the run\'s budget in credits (docs/runs.md, "Budgets"). Before every model call, when what the run spent plus the call\'s credit hold would exceed it, the run waits (`run_waiting` with `reason: "budget"`) until the budget is raised. Absent or null: none.',
};

@Schema({ name: 'DocumentRunRequest', description: 'Every field is optional; an empty body runs the stored content with no inputs.' })
export class DocumentRunBody {
  @IsOptional()
  @IsObject()
  @Doc({ description: 'Values keyed by input block name, checked against the input blocks (400 `invalid_inputs` with details).', schema: { type: 'object', additionalProperties: true } })
  inputs?: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'true (default): stream events (SSE or NDJSON); false: answer once the run ends (or waits at an ask block).' })
  stream?: boolean;

  @IsOptional()
  @IsIn(['sse', 'ndjson'])
  @Doc({ description: '`sse` (default, text/event-stream) or `ndjson` (application/x-ndjson); only when stream is true.' })
  format?: 'sse' | 'ndjson';

  @IsOptional()
  @IsObject()
  @Doc({ description: 'Debug mode: run this document JSON instead of the stored content. Nothing is stored (no run record, no event log; the run cannot be resumed or reconnected to).', schema: { type: 'object' } })
  content?: Record<string, unknown>;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Doc({ description: 'Whole seconds; at most `runs.maxTimeoutSeconds` (400 `timeout_too_large`). Default `runs.defaultTimeoutSeconds`.' })
  timeout?: number;

  @IsOptional()
  @IsIn(['stop', 'continue'])
  @Doc({ description: 'Trellis addition: after a failed block, `stop` the run or `continue` with the next block, for blocks without `attrs.onError`. Default `runs.onError`.' })
  onError?: 'stop' | 'continue';

  @IsOptional()
  @Nested(() => BudgetDto)
  @Doc(budgetDoc)
  budget?: BudgetDto | null;
}

@Schema({ name: 'RunBudgetRequest' })
export class RunBudgetBody {
  @IsDefined({ message: 'credits is required (a whole number of credits, or null to clear the budget)' })
  @ValidateIf((_, value) => value !== null)
  @IsInt()
  @Min(0)
  @Max(MAX_BUDGET)
  @Doc({ nullable: true, description: `The run's new budget in credits, a whole number from 0 to ${MAX_BUDGET}; null clears it. Required.`, example: 1000 })
  credits!: number | null;
}

@Schema({ name: 'RunResumeRequest' })
export class ResumeBody {
  @IsDefined()
  @Doc({ description: 'The answer to the ask block the run waits at (any JSON value but null); it becomes that block\'s output. Required: a body without it is refused with 400 `validation_failed`.', schema: {} })
  answer!: unknown;
}

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value);

export class RunEventsQuery {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  @Doc({ description: 'Send the events after this sequence number (the `Last-Event-ID` header does the same and wins).' })
  after?: number;

  @IsOptional()
  @IsIn(['sse', 'ndjson'])
  @Doc({ description: '`sse` (default) or `ndjson`.' })
  format?: 'sse' | 'ndjson';
}

export class RunListQuery extends PageQuery {}
