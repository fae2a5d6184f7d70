import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../../../kernel/auth/principal.js';
import { toTrellisError, type TrellisError } from '../../../kernel/errors.js';
import type { BlockService } from '../../blocks/index.js';

/**
 * The block's permission check for a record of an evaluation or dataset: a caller who cannot read
 * the block gets the record's own 404 (`missing`), so an outsider learns nothing of it.
 */
export async function requireBlockOf(blocks: BlockService, em: EntityManager, principal: Principal, blockId: string, wanted: 'read' | 'write', missing: () => TrellisError): Promise<void> {
  try {
    await blocks.requireBlock(em, principal, blockId, { wanted });
  } catch (error) {
    const failure = toTrellisError(error);
    if (failure.code === 'block_not_found') throw missing();
    throw failure;
  }
}
