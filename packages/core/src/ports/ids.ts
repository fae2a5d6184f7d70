import type { ServiceIdentifier } from 'inversify';
import { uuidv7 } from '../kernel/crypto.js';

/** Identifier source for new records. The default produces time-ordered UUIDv7. */
export interface Ids {
  next(): string;
}

export const idsServiceIdentifier: ServiceIdentifier<Ids> = Symbol.for('@trellis/core/Ids');

export class UuidV7Ids implements Ids {
  next(): string {
    return uuidv7();
  }
}
