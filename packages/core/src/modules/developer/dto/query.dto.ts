import { Transform } from 'class-transformer';
import { IsDate, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { Doc } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { devResourceTypes } from '../resource-types.js';

/**
 * A point in time in a query string: ISO 8601 with a time zone (`2026-01-31T12:00:00Z`) or epoch
 * milliseconds (`1769860800000`). Anything else stays a string and fails `@IsDate`.
 */
export const toInstant = ({ value }: { value: unknown }): unknown => {
  if (typeof value !== 'string') return value;
  if (/^\d{1,15}$/.test(value)) return new Date(Number(value));
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) {
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? value : date;
  }
  return value;
};

/** `GET /dev/hardware/{id}/logs`: paging plus an optional time window (both ends inclusive). */
export class HardwareLogQuery extends PageQuery {
  @IsOptional()
  @Transform(toInstant)
  @IsDate({ message: 'must be an ISO 8601 date-time with a time zone, or epoch milliseconds' })
  @Doc({ description: 'Only entries at or after this time (ISO 8601 with zone, or epoch ms).', schema: { type: 'string' } })
  start_time?: Date;

  @IsOptional()
  @Transform(toInstant)
  @IsDate({ message: 'must be an ISO 8601 date-time with a time zone, or epoch milliseconds' })
  @Doc({ description: 'Only entries at or before this time (ISO 8601 with zone, or epoch ms).', schema: { type: 'string' } })
  end_time?: Date;
}

/** `GET /dev/schema?type=` */
export class DevTypeQuery {
  @IsIn(devResourceTypes)
  @Doc({ description: `One of ${devResourceTypes.join(', ')}.` })
  type!: string;
}

/** `GET /dev/pointer?type=&pointer=` */
export class DevPointerQuery extends DevTypeQuery {
  @IsString()
  @MaxLength(1024)
  @Doc({ description: 'RFC 6901 JSON Pointer into the type\'s schema (`""` is the whole schema; `/properties/name`).', example: '/properties/name' })
  pointer!: string;
}

/** `GET /dev/list?type=&page=&size=` */
export class DevTypedListQuery extends PageQuery {
  @IsIn(devResourceTypes)
  @Doc({ description: `One of ${devResourceTypes.join(', ')}.` })
  type!: string;
}
