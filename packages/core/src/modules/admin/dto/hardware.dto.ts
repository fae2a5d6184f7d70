import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { hardwareStatuses } from '../../developer/index.js';

export class AdminHardwareListQuery extends PageQuery {
  @IsOptional()
  @IsIn(hardwareStatuses)
  @Doc({ description: `One of ${hardwareStatuses.join(', ')}.` })
  status?: string;
}

@Schema({ name: 'HardwareResetRequest' })
export class HardwareResetBody {
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Matches(/^[A-Za-z0-9_.:-]+$/, { message: 'may hold letters, digits and _ . : - only' })
  @Doc({ description: 'Reset mode passed to the device (`soft`, `factory`, ...); default `soft`.', example: 'soft' })
  mode?: string;
}
