import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsDate, IsIn, IsInt, IsOptional, IsUUID, Matches, Max, Min } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';
import { orderKinds, orderStatuses, type OrderKind, type OrderStatus } from '../entities/payment-order.entity.js';

const toBool = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);

export class AdminOrderQuery extends PageQuery {
  @IsOptional()
  @IsIn(orderStatuses)
  @Doc({ description: 'Only orders in this status.' })
  status?: OrderStatus;

  @IsOptional()
  @IsIn(orderKinds)
  @Doc({ description: 'Only orders of this kind.' })
  kind?: OrderKind;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'Only orders of this team.' })
  teamId?: string;
}

export class AdminCouponQuery extends PageQuery {
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  @Doc({ description: 'Include disabled coupons (default false).' })
  includeDisabled?: boolean;
}

@Schema({ name: 'CreateCouponRequest', description: 'Give exactly one of percentOff and amountOff.' })
export class CreateCouponBody {
  @Matches(/^[A-Za-z0-9_-]{3,64}$/, { message: 'must be 3 to 64 letters, digits, _ or -' })
  @Doc({ description: 'Case-insensitive; stored in upper case.', example: 'LAUNCH20' })
  code!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  @Doc({ description: 'Percent taken off the order amount (rounded down to the minor unit).', example: 20 })
  percentOff?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Doc({ description: 'Amount taken off, in the minor unit of `billing.currency`; never more than the order amount.' })
  amountOff?: number;

  @IsOptional()
  @Type(() => Date)
  @IsDate()
  @Doc({ description: 'ISO 8601 instant after which the coupon no longer applies.', schema: { type: 'string', format: 'date-time' } })
  expiresAt?: Date;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Doc({ description: 'Orders that may hold the coupon at once (pending or paid); omit for no cap.' })
  maxRedemptions?: number;
}
