import type { MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Hooks } from '../../../kernel/hooks.js';
import { hooksServiceIdentifier, loggerServiceIdentifier, ormServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { OAuthAuditEvent } from '../entities/audit-event.entity.js';
import '../hooks.js';

export interface ReuseEvent {
  kind: 'authorization_code' | 'refresh_token';
  clientId: string;
  userId: string | null;
  tokenFamily: string;
  ip: string;
  userAgent: string;
}

/**
 * Security events of the authorization server: a stored record, a warning in the log and the
 * `oauth.token_reuse_detected` hook. Records hold ids only, never a token or code.
 */
@injectable()
export class OAuthAuditService {
  private readonly log: Logger;

  constructor(
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(loggerServiceIdentifier) log: Logger,
  ) {
    this.log = log.child({ module: 'oauth' });
  }

  async reuseDetected(event: ReuseEvent): Promise<void> {
    const type = event.kind === 'refresh_token' ? 'refresh_token_reuse' : 'authorization_code_reuse';
    const em = this.orm.em.fork();
    em.create(OAuthAuditEvent, {
      id: this.ids.next(),
      type,
      clientId: event.clientId.slice(0, 64),
      userId: event.userId,
      tokenFamilyId: event.tokenFamily,
      ip: event.ip.slice(0, 64),
      userAgent: event.userAgent.slice(0, 512),
      createdAt: this.clock.now(),
    } as OAuthAuditEvent);
    await em.flush();
    this.log.warn(
      { event: type, clientId: event.clientId, userId: event.userId, tokenFamily: event.tokenFamily, ip: event.ip },
      'OAuth token reuse detected: the token family is revoked',
    );
    await this.emitSafely(event);
  }

  /** Lists recorded events, newest first (for administrators and tests). */
  list(options: { clientId?: string; limit?: number } = {}): Promise<OAuthAuditEvent[]> {
    return this.orm.em
      .fork()
      .find(OAuthAuditEvent, options.clientId ? { clientId: options.clientId } : {}, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: options.limit ?? 100 });
  }

  private async emitSafely(event: ReuseEvent): Promise<void> {
    try {
      await this.hooks.emit('oauth.token_reuse_detected', event);
    } catch (error) {
      // The family is already revoked; a failing listener must not change the client's answer.
      this.log.error({ err: error }, 'an oauth.token_reuse_detected hook failed');
    }
  }
}
