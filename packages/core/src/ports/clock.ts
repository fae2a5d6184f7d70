import type { ServiceIdentifier } from 'inversify';

/** Time source. Tests bind a controllable clock; everything else uses the system clock. */
export interface Clock {
  now(): Date;
  nowMs(): number;
}

export const clockServiceIdentifier: ServiceIdentifier<Clock> = Symbol.for('@trellis/core/Clock');

export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }

  nowMs(): number {
    return Date.now();
  }
}

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  constructor(private current = Date.now()) {}

  now(): Date {
    return new Date(this.current);
  }

  nowMs(): number {
    return this.current;
  }

  set(ms: number | Date): void {
    this.current = typeof ms === 'number' ? ms : ms.getTime();
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
