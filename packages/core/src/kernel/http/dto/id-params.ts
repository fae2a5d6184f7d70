import { IsUUID } from 'class-validator';
import { Doc } from '../docs-metadata.js';

/** `:id` path parameter holding a UUID. A malformed id answers 404, like a missing one. */
export class IdParams {
  @IsUUID('all')
  @Doc({ description: 'Resource id (UUID).' })
  id!: string;
}
