import { Type } from 'class-transformer';
import { IsDefined, IsNumber, IsObject, IsOptional, IsString, Length, ValidateBy, ValidateNested } from 'class-validator';

/** `value` of a sensor reading: a finite number, a string of at most 1024 characters, or a boolean. */
function IsReading(): PropertyDecorator {
  return ValidateBy({
    name: 'isReading',
    validator: {
      validate: (value: unknown) =>
        (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value.length <= 1024) || typeof value === 'boolean',
      defaultMessage: () => 'must be a finite number, a string of at most 1024 characters, or a boolean',
    },
  });
}

export class HardwareStatusDataDto {
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  cpu?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  memory?: number;

  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  temperature?: number;
}

/** Params of `status` sent by a hardware client: `{ type, data: { cpu, memory, temperature } }`. */
export class HardwareStatusDto {
  @IsString()
  @Length(1, 64)
  type!: string;

  @IsObject()
  @ValidateNested()
  @Type(() => HardwareStatusDataDto)
  data!: HardwareStatusDataDto;
}

/** Params of `sensor` sent by a hardware client: `{ sensorId, type, value, unit }`. */
export class HardwareSensorDto {
  @IsString()
  @Length(1, 128)
  sensorId!: string;

  @IsString()
  @Length(1, 64)
  type!: string;

  @IsDefined()
  @IsReading()
  value!: number | string | boolean;

  @IsOptional()
  @IsString()
  @Length(0, 32)
  unit?: string;
}
