import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import { TrellisError } from '../../../kernel/errors.js';
import { entityManagerServiceIdentifier } from '../../../kernel/tokens.js';
import { Conversation } from '../entities/conversation.entity.js';

export const turnInProgress = () => new TrellisError('conflict', 'turn_in_progress', 'The bot is already answering in this conversation; wait for its end (or stop it: POST /conversation/{convId}/turn/stop).');

/**
 * One turn at a time per conversation, held on the conversation row (`turn_id`, with a lease
 * renewed while the turn runs), so the rule holds across host processes: taking it is one
 * conditional update, which only one of two simultaneous senders can win.
 */
@injectable()
export class TurnClaims {
  constructor(@inject(entityManagerServiceIdentifier) private readonly root: EntityManager) {}

  /** Takes the conversation for `turnId`; throws `turn_in_progress` (409) when a turn holds it. */
  async claim(convId: string, turnId: string): Promise<void> {
    const taken = await this.root.fork().nativeUpdate(Conversation, { id: convId, turnId: null }, { turnId, turnHeartbeatAt: new Date() });
    if (taken !== 1) throw turnInProgress();
  }

  /** Renews the lease; false when the turn no longer holds the conversation. */
  async renew(convId: string, turnId: string): Promise<boolean> {
    return (await this.root.fork().nativeUpdate(Conversation, { id: convId, turnId }, { turnHeartbeatAt: new Date() })) === 1;
  }

  async release(convId: string, turnId: string): Promise<void> {
    await this.root.fork().nativeUpdate(Conversation, { id: convId, turnId }, { turnId: null, turnHeartbeatAt: null });
  }

  /** The turn holding the conversation now, or null. */
  async current(em: EntityManager, convId: string): Promise<string | null> {
    const row = await em.fork().findOne(Conversation, { id: convId }, { fields: ['turnId'] });
    return row?.turnId ?? null;
  }

  /** Releases inside `tx` (with the turn's last events). */
  async releaseIn(tx: EntityManager, convId: string, turnId: string): Promise<void> {
    await tx.nativeUpdate(Conversation, { id: convId, turnId }, { turnId: null, turnHeartbeatAt: null });
  }

  /** The conversations whose turn's lease went stale (its process went away). */
  async findStale(staleBefore: Date): Promise<StaleTurn[]> {
    const rows = await this.root.fork().find(Conversation, { turnId: { $ne: null }, turnHeartbeatAt: { $lt: staleBefore } }, { fields: ['id', 'turnId', 'turnHeartbeatAt'], limit: 100 });
    return rows.map((row) => ({ convId: row.id, turnId: row.turnId!, heartbeatAt: row.turnHeartbeatAt }));
  }

  /** Frees a stale conversation unless its turn renewed the lease meanwhile. */
  async releaseStale(stale: StaleTurn, tx: EntityManager = this.root.fork()): Promise<boolean> {
    return (await tx.nativeUpdate(Conversation, { id: stale.convId, turnId: stale.turnId, turnHeartbeatAt: stale.heartbeatAt }, { turnId: null, turnHeartbeatAt: null })) === 1;
  }
}

export interface StaleTurn {
  convId: string;
  turnId: string;
  heartbeatAt: Date | null;
}
