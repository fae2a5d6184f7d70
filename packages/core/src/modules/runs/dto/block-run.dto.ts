import { IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Length, Min } from 'class-validator';
import { Doc, Nested, Schema } from '../../../kernel/http/docs-metadata.js';
import { BudgetDto } from '../../blocks/index.js';
import { budgetDoc } from './run.dto.js';

const inputsDoc = { description: 'Values keyed by input name (the input blocks, or the deployment\'s input definitions), checked before the run starts (400 `invalid_inputs`).', schema: { type: 'object', additionalProperties: true } };

/** Stream options shared by the three block run routes (as on `POST /documents/:id/run`). */
class RunOptions {
  @IsOptional()
  @IsBoolean()
  @Doc({ description: 'true (default): stream events; false: answer once the run ends or waits at an ask block.' })
  stream?: boolean;

  @IsOptional()
  @IsIn(['sse', 'ndjson'])
  @Doc({ description: '`sse` (default) or `ndjson`.' })
  format?: 'sse' | 'ndjson';

  @IsOptional()
  @IsInt()
  @Min(1)
  @Doc({ description: 'Whole seconds; at most `runs.maxTimeoutSeconds`.' })
  timeout?: number;

  @IsOptional()
  @IsIn(['stop', 'continue'])
  @Doc({ description: 'What a failed block does to the run (default `runs.onError`).' })
  onError?: 'stop' | 'continue';

  @IsOptional()
  @Nested(() => BudgetDto)
  @Doc(budgetDoc)
  budget?: BudgetDto | null;
}

@Schema({ name: 'BlockRunRequest' })
export class BlockRunBody extends RunOptions {
  @IsObject()
  @Doc(inputsDoc)
  inputs!: Record<string, unknown>;
}

@Schema({ name: 'BlockTestRequest', description: 'A test run of inline content: nothing is stored.' })
export class BlockTestBody extends RunOptions {
  @IsObject()
  @Doc(inputsDoc)
  inputs!: Record<string, unknown>;

  @IsObject()
  @Doc({ description: 'The workflow to run: document JSON `{ "type": "doc", "content": [...] }`.', schema: { type: 'object' } })
  content!: Record<string, unknown>;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'The project whose team pays (execute permission needed); default: your first team.' })
  projectId?: string;
}

@Schema({ name: 'BlockApiRunRequest' })
export class BlockApiBody extends RunOptions {
  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Attach to an earlier run of this deployment instead of starting one: its events after `Last-Event-ID` (stream) or its result (stream false).' })
  runId?: string;

  @IsOptional()
  @IsObject()
  @Doc(inputsDoc)
  inputs?: Record<string, unknown>;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'The deployed version to run (default: the latest).', example: '3' })
  version?: string;
}
