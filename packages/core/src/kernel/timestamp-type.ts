import { DateTimeType, Type, type Platform, type TransformContext } from '@mikro-orm/core';

/**
 * The mapped type of every `datetime` property. MikroORM's own type lets the unit of work see a
 * change that is not there on SQLite: the state it remembers after a load holds a `Date`, while
 * the snapshot it compares at flush holds the platform's form (a number of milliseconds on
 * SQLite), so every flush rewrote `created_at` and `updated_at` of loaded entities with their
 * old values, even after an explicit update in the same transaction. Values are compared as
 * instants here, whatever their form; what is written stays the platform's form.
 */
export class TimestampType extends DateTimeType {
  override convertToDatabaseValue(value: unknown, platform: Platform, context?: TransformContext): any {
    if (value instanceof Date) return platform.processDateProperty(value);
    return super.convertToDatabaseValue(value as never, platform, context);
  }

  override compareValues(a: unknown, b: unknown): boolean {
    return instant(a) === instant(b);
  }
}

function instant(value: unknown): number | null | undefined {
  if (value === null || value === undefined) return value;
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    const parsed = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    return Number.isNaN(parsed) ? NaN : parsed;
  }
  return NaN;
}

/** `discovery.getMappedType`: `datetime` (and `Date`) properties map to `TimestampType`. */
export function mappedType(type: string, platform: Platform): Type<unknown> {
  const lower = type.toLowerCase();
  if (type === 'Date' || lower === 'datetime' || lower === 'timestamp' || lower === 'timestamptz') return Type.getType(TimestampType);
  return platform.getDefaultMappedType(type);
}
