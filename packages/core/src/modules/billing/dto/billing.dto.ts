import { Transform } from 'class-transformer';
import { IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value);

const teamIdDoc = { description: 'Team id (UUID). The caller must be a member; anything else answers 400 NO_TEAM.', example: '0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f90' };

export class SubscriptionQuery {
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ description: "Team id; defaults to the caller's first team (the personal team)." })
  teamId?: string;
}

@Schema({ name: 'ChangePlanRequest' })
export class ChangePlanBody {
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc(teamIdDoc)
  teamId!: string;

  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc({ description: 'Code of a configured plan (`GET /billing/plans`); unknown codes answer 400 INVALID_PLAN.', example: 'pro' })
  targetPlanCode!: string;

  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(16)
  @Doc({ description: '`monthly` or `yearly`; anything else answers 400 INVALID_BILLING_PERIOD.', example: 'monthly' })
  billingPeriod!: string;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc({ description: 'Coupon code for the payment order of an upgrade.' })
  couponCode?: string;
}

@Schema({ name: 'TeamRequest' })
export class TeamBody {
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc(teamIdDoc)
  teamId!: string;
}

@Schema({ name: 'PurchaseCreditsRequest' })
export class PurchaseCreditsBody {
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc(teamIdDoc)
  teamId!: string;

  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc({ description: 'Code of a configured credit pack (`GET /billing/plans`).', example: 'credits-1000' })
  packCode!: string;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  couponCode?: string;
}

export class TeamPageQuery extends PageQuery {
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @Doc({ description: "Team id; defaults to the caller's first team." })
  teamId?: string;
}

@Schema({ name: 'ReserveCreditsRequest' })
export class ReserveCreditsBody {
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  @Doc(teamIdDoc)
  teamId!: string;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  @Doc({ description: 'Credits to hold: the most the work may cost.', example: 25 })
  amount!: number;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @MaxLength(200)
  @Doc({ description: 'What the credits are for; shown in the ledger.', example: 'nightly import' })
  reason?: string;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(86_400)
  @Doc({ description: 'Seconds before an unsettled reservation is released (default `billing.reservationTtlSeconds`).' })
  ttlSeconds?: number;
}

@Schema({ name: 'SettleReservationRequest' })
export class SettleReservationBody {
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1_000_000_000)
  @Doc({ description: 'Credits the work used, at most the reserved amount; the rest goes back.', example: 18 })
  usedCredits!: number;

  @IsOptional()
  @Transform(trim)
  @IsString()
  @MaxLength(200)
  reason?: string;
}

@Schema({ name: 'ReleaseReservationRequest' })
export class ReleaseReservationBody {
  @IsOptional()
  @Transform(trim)
  @IsString()
  @MaxLength(200)
  reason?: string;
}

export class BillingIdParams {
  @IsString()
  @MaxLength(64)
  id!: string;
}

export class ProviderParams {
  @IsString()
  @MaxLength(32)
  provider!: string;
}
