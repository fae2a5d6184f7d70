import { IsString, Length, Matches } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

export const MAX_LOG_CONTENT = 65_536;

@Schema({ name: 'HardwareLogCreateRequest' })
export class HardwareLogBody {
  @IsString()
  @Length(1, 64)
  @Matches(/^[A-Za-z0-9_.:-]+$/, { message: 'may hold letters, digits and _ . : - only' })
  @Doc({ description: 'Kind of entry (`info`, `error`, `sim`, ...). A `sim` entry whose content is a JSON object records the SIM information the device reports.', example: 'info' })
  type!: string;

  @IsString()
  @Length(1, MAX_LOG_CONTENT)
  @Doc({ description: `The entry text (at most ${MAX_LOG_CONTENT} characters).`, example: 'boot complete' })
  content!: string;
}
