import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { AuditEntry } from '../entities/audit-entry.entity.js';
import type { AuditEntryView } from '../schemas.js';

export interface AuditRecordInput {
  /** Who acted: give `principal` (preferred: an impersonation records the administrator) or `actorId`. */
  actorId?: string | null;
  /**
   * The caller. The entry names the real actor: the administrator behind a `become` token, with
   * the impersonated user in `data.impersonatedUserId`.
   */
  principal?: Principal;
  action: string;
  targetType?: string;
  targetId?: string;
  data?: Record<string, unknown>;
  /** Request facts, when the action came over HTTP. */
  ip?: string;
  userAgent?: string;
}

export interface AuditFilter {
  actorId?: string;
  action?: string;
  targetType?: string;
  targetId?: string;
}

/** Writes and reads the audit trail. */
@injectable()
export class AuditService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
  ) {}

  /**
   * Adds an entry to the unit of work. It is written by the caller's next `flush` (so it commits
   * with the change it records, inside the same transaction), or flushed here when `flush` is set.
   */
  async record(em: EntityManager, input: AuditRecordInput, options: { flush?: boolean } = {}): Promise<AuditEntry> {
    const { principal } = input;
    const actorId = principal ? (principal.actorId ?? principal.userId) : (input.actorId ?? null);
    const data = principal?.actorId ? { ...input.data, impersonatedUserId: principal.userId } : (input.data ?? null);
    const entry = em.create(AuditEntry, {
      id: this.ids.next(),
      actorId,
      action: input.action,
      targetType: input.targetType ?? null,
      targetId: input.targetId ?? null,
      data,
      ip: input.ip?.slice(0, 64) ?? null,
      userAgent: input.userAgent?.slice(0, 512) ?? null,
      createdAt: this.clock.now(),
    } as AuditEntry);
    if (options.flush) await em.flush();
    return entry;
  }

  /** Newest first. */
  async list(em: EntityManager, filter: AuditFilter, page: Paging): Promise<{ items: AuditEntry[]; total: number }> {
    const where: FilterQuery<AuditEntry> = {};
    if (filter.actorId) where.actorId = filter.actorId;
    if (filter.action) where.action = filter.action;
    if (filter.targetType) where.targetType = filter.targetType;
    if (filter.targetId) where.targetId = filter.targetId;
    const [items, total] = await em.findAndCount(AuditEntry, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.size,
      offset: page.offset,
    });
    return { items, total };
  }
}

export const toAuditEntryView = (entry: AuditEntry): AuditEntryView => ({
  id: entry.id,
  actorId: entry.actorId,
  action: entry.action,
  targetType: entry.targetType,
  targetId: entry.targetId,
  data: entry.data,
  ip: entry.ip,
  createdAt: entry.createdAt.toISOString(),
});
