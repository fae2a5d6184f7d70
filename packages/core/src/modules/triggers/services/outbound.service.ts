import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { UniqueConstraintViolationException, type EntityManager, type FilterQuery } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { networkGuardServiceIdentifier, refusalOf, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { loggerServiceIdentifier } from '../../../kernel/tokens.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { pubSubServiceIdentifier, type PubSub } from '../../../ports/pubsub.js';
import { type SecretBox, secretBoxServiceIdentifier } from '../../ai/index.js';
import { Team, User, TeamService } from '../../identity/index.js';
import { WebhookDelivery, WebhookSubscription, type DeliveryAttempt, type WebhookEvent } from '../entities/subscription.entity.js';
import { triggerErrors } from '../errors.js';
import { triggersConfigServiceIdentifier } from '../tokens.js';
import type { TriggersConfig } from '../triggers.config.js';
import { newWebhookSecret, webhookHeaders } from './signature.js';

export interface SubscriptionInput {
  url?: string;
  events?: WebhookEvent[];
  teamId?: string | null;
  description?: string;
  enabled?: boolean;
  rotateSecret?: boolean;
}

/** An event to send: whose it is (the user, and the team when there is one), and a key that names it once. */
export interface OutboundEvent {
  type: WebhookEvent;
  userId: string | null;
  teamId: string | null;
  key: string;
  data: Record<string, unknown>;
}

/**
 * Outbound webhooks: subscriptions, the deliveries of the events they asked for (a table, so they
 * survive restarts), and the delivery loop every process runs: it claims due deliveries (compare
 * and set), POSTs them through the network guard signed with the Standard Webhooks scheme, and
 * retries failures with exponential backoff until `outbound.maxAttempts`.
 */
/** Announced on PubSub when a subscription is created, changed or deleted. */
export const SUBSCRIPTIONS_CHANGED = 'triggers:subscriptions:changed';
/** At most this long before a change another process could not announce is seen. */
const OWNERS_TTL_MS = 30_000;

@injectable()
export class OutboundWebhookService {
  private pass: Promise<void> | null = null;
  /**
   * Who has an enabled subscription (team ids, and users for their own), read once and forgotten
   * whenever a subscription changes on any process (PubSub) or after OWNERS_TTL_MS: a run or
   * turn whose owner has none costs no statement.
   */
  private owners: { readAt: number; teams: Set<string>; users: Set<string> } | null = null;
  private again = false;
  private stopped = false;

  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(secretBoxServiceIdentifier) private readonly box: SecretBox,
    @inject(networkGuardServiceIdentifier) private readonly guard: NetworkGuard,
    @inject(triggersConfigServiceIdentifier) private readonly config: TriggersConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
  ) {}

  // ---------------------------------------------------------------------------------------------
  // Subscriptions

  async list(em: EntityManager, principal: Principal, page: Paging): Promise<{ items: WebhookSubscription[]; total: number }> {
    const [items, total] = await em.findAndCount(WebhookSubscription, { owner: principal.userId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async get(em: EntityManager, principal: Principal, subscriptionId: string): Promise<WebhookSubscription> {
    const found = await em.findOne(WebhookSubscription, { id: subscriptionId, owner: principal.userId });
    if (!found) throw triggerErrors.subscriptionNotFound();
    return found;
  }

  /** A new subscription; a team one needs the team role owner or admin. Its secret is answered this once. */
  async create(em: EntityManager, principal: Principal, input: SubscriptionInput & { url: string; events: WebhookEvent[] }): Promise<{ subscription: WebhookSubscription; secret: string }> {
    this.checkDestination(input.url);
    if (input.teamId) await this.teams.requireManager(em, input.teamId, principal.userId);
    const secret = newWebhookSecret();
    const now = this.clock.now();
    const subscription = em.create(WebhookSubscription, {
      id: this.ids.next(),
      owner: em.getReference(User, principal.userId),
      team: input.teamId ? em.getReference(Team, input.teamId) : null,
      url: input.url,
      events: [...new Set(input.events)],
      description: input.description ?? '',
      secret: this.box.seal(secret),
      enabled: input.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    });
    await em.flush();
    await this.changed();
    return { subscription, secret };
  }

  async update(em: EntityManager, principal: Principal, subscriptionId: string, input: SubscriptionInput): Promise<{ subscription: WebhookSubscription; secret: string | null }> {
    const subscription = await this.get(em, principal, subscriptionId);
    if (input.url !== undefined) {
      this.checkDestination(input.url);
      subscription.url = input.url;
    }
    if (input.events !== undefined) subscription.events = [...new Set(input.events)];
    if (input.description !== undefined) subscription.description = input.description;
    if (input.enabled !== undefined) subscription.enabled = input.enabled;
    let secret: string | null = null;
    if (input.rotateSecret) {
      secret = newWebhookSecret();
      subscription.secret = this.box.seal(secret);
    }
    subscription.updatedAt = this.clock.now();
    await em.flush();
    await this.changed();
    return { subscription, secret };
  }

  async remove(em: EntityManager, principal: Principal, subscriptionId: string): Promise<void> {
    const subscription = await this.get(em, principal, subscriptionId);
    await em.nativeDelete(WebhookDelivery, { subscription: subscription.id });
    await em.nativeDelete(WebhookSubscription, { id: subscription.id });
    await this.changed();
  }

  /** http or https, no user info; an address literal the network guard refuses is refused here already. */
  private checkDestination(url: string): void {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw triggerErrors.invalidDestination('must be an absolute http or https URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw triggerErrors.invalidDestination('must be an http or https URL');
    if (parsed.username || parsed.password) throw triggerErrors.invalidDestination('must not carry a user name or password');
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    const port = Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80);
    if (isIP(host)) {
      const refused = this.guard.refusal(host, port, [host]);
      if (refused) throw triggerErrors.invalidDestination(refused.message);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The delivery log

  async deliveries(em: EntityManager, principal: Principal, subscriptionId: string, page: Paging): Promise<{ items: WebhookDelivery[]; total: number }> {
    const subscription = await this.get(em, principal, subscriptionId);
    const [items, total] = await em.findAndCount(WebhookDelivery, { subscription: subscription.id }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async delivery(em: EntityManager, principal: Principal, subscriptionId: string, deliveryId: string): Promise<WebhookDelivery> {
    const subscription = await this.get(em, principal, subscriptionId);
    const found = await em.findOne(WebhookDelivery, { id: deliveryId, subscription: subscription.id });
    if (!found) throw triggerErrors.deliveryNotFound();
    return found;
  }

  /** Sends a delivery again (the same message id and body): a new round of attempts, the log kept. */
  async redeliver(em: EntityManager, principal: Principal, subscriptionId: string, deliveryId: string): Promise<WebhookDelivery> {
    const found = await this.delivery(em, principal, subscriptionId, deliveryId);
    const now = this.clock.now();
    await em.nativeUpdate(WebhookDelivery, { id: found.id }, { status: 'pending', attempts: 0, nextAttemptAt: now, lockedUntil: null, updatedAt: now });
    this.kick();
    const fresh = await em.fork().findOneOrFail(WebhookDelivery, { id: found.id });
    return fresh;
  }

  // ---------------------------------------------------------------------------------------------
  // Events in

  /** Forgets who has subscriptions (a subscription changed here or on another process). */
  forgetOwners(): void {
    this.owners = null;
  }

  /** Subscriptions changed: every process forgets who has some. */
  private async changed(): Promise<void> {
    this.owners = null;
    await this.pubsub.publish(SUBSCRIPTIONS_CHANGED, 'changed').catch((error: unknown) => this.log.warn({ err: error }, 'triggers: could not announce a subscription change'));
  }

  private async subscribedOwners(db: () => EntityManager): Promise<{ teams: Set<string>; users: Set<string> }> {
    const now = this.clock.nowMs();
    if (this.owners && now - this.owners.readAt < OWNERS_TTL_MS) return this.owners;
    const rows = await db().find(WebhookSubscription, { enabled: true }, { fields: ['owner', 'team'] });
    const owners = { readAt: now, teams: new Set<string>(), users: new Set<string>() };
    for (const row of rows) {
      const team = (row.team as { id?: string } | null)?.id;
      if (team) owners.teams.add(team);
      else owners.users.add((row.owner as unknown as { id: string }).id);
    }
    this.owners = owners;
    return owners;
  }

  /** Stores one delivery per subscription that asked for the event (none twice for one event), then starts sending. */
  async enqueue(fork: () => EntityManager, event: OutboundEvent): Promise<number> {
    if (!event.userId && !event.teamId) return 0;
    // The manager is forked only when needed: most events (every run's end) have no subscriber, and the owners are remembered.
    let made: EntityManager | undefined;
    const db = () => (made ??= fork());
    const owners = await this.subscribedOwners(db);
    if (!(event.teamId && owners.teams.has(event.teamId)) && !(event.userId && owners.users.has(event.userId))) return 0;
    const em = db();
    const whose: FilterQuery<WebhookSubscription>[] = [];
    if (event.teamId) whose.push({ team: event.teamId });
    if (event.userId) whose.push({ team: null, owner: event.userId });
    const subscriptions = (await em.find(WebhookSubscription, { enabled: true, $or: whose })).filter((s) => s.events.includes(event.type));
    if (!subscriptions.length) return 0;
    const messageId = `msg_${createHash('sha256').update(`${event.type}\u0000${event.key}`).digest('base64url').slice(0, 32)}`;
    const now = this.clock.now();
    const body = JSON.stringify({ type: event.type, timestamp: now.toISOString(), data: event.data });
    let stored = 0;
    for (const subscription of subscriptions) {
      try {
        await em.fork().insert(WebhookDelivery, {
          id: this.ids.next(),
          subscription: subscription.id,
          messageId,
          event: event.type,
          body,
          status: 'pending',
          attempts: 0,
          nextAttemptAt: now,
          lockedUntil: null,
          lastStatusCode: null,
          log: [],
          createdAt: now,
          updatedAt: now,
        } as never);
        stored++;
      } catch (error) {
        if (!(error instanceof UniqueConstraintViolationException)) throw error;
      }
    }
    if (stored) this.kick();
    return stored;
  }

  // ---------------------------------------------------------------------------------------------
  // The delivery loop

  /** A delivery pass soon (after the current one, when one is going). */
  kick(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    setImmediate(() => this.run(this.forkOf?.()).catch((error: unknown) => this.log.error({ err: error }, 'webhook delivery pass failed')));
  }

  /** How `kick` gets a unit of work (set by the module at start). */
  forkOf?: () => EntityManager;

  /** Stops sending: no new pass starts; the one going on finishes its attempts (each bounded by `outbound.timeoutMs`). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.pass?.catch(() => undefined);
  }

  /** One delivery pass (the periodic job and `kick` share it: never two at once in a process). */
  async run(em: EntityManager | undefined): Promise<void> {
    if (!em || this.stopped) return;
    if (this.pass) {
      this.again = true;
      return this.pass;
    }
    this.pass = (async () => {
      try {
        do {
          this.again = false;
          await this.deliverDue(em);
        } while (this.again && !this.stopped);
      } finally {
        this.pass = null;
      }
    })();
    return this.pass;
  }

  private async deliverDue(em: EntityManager): Promise<void> {
    const now = this.clock.now();
    const candidates = await em.fork().find(
      WebhookDelivery,
      { $or: [{ status: 'pending', nextAttemptAt: { $lte: now } }, { status: 'delivering', lockedUntil: { $lt: now } }] },
      { orderBy: { nextAttemptAt: 'asc' }, limit: this.config.outbound.batch, populate: ['subscription'] },
    );
    const lockedUntil = new Date(now.getTime() + this.config.outbound.timeoutMs + 5_000);
    const mine: WebhookDelivery[] = [];
    for (const candidate of candidates) {
      const claimed = await em.fork().nativeUpdate(
        WebhookDelivery,
        { id: candidate.id, status: candidate.status, attempts: candidate.attempts, updatedAt: candidate.updatedAt },
        { status: 'delivering', lockedUntil, updatedAt: now },
      );
      if (claimed) mine.push(candidate);
    }
    await Promise.all(mine.map((delivery) => this.attempt(em, delivery)));
  }

  private async attempt(em: EntityManager, delivery: WebhookDelivery): Promise<void> {
    const subscription = delivery.subscription;
    const started = this.clock.nowMs();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const secret = this.box.open(subscription.secret) as string;
      const headers = { 'content-type': 'application/json', 'user-agent': 'trellis-webhooks/1', ...webhookHeaders(secret, delivery.messageId, delivery.body, this.clock.now()) };
      const response = await this.guard.fetch(subscription.url, { method: 'POST', headers, body: delivery.body, redirect: 'manual', signal: AbortSignal.timeout(this.config.outbound.timeoutMs) });
      statusCode = response.status;
      // The receiver's body is never read into the log (nor shown anywhere).
      await response.body?.cancel().catch(() => undefined);
      if (statusCode < 200 || statusCode > 299) error = `answered ${statusCode}`;
    } catch (caught) {
      error = describeFailure(caught);
    }
    const now = this.clock.now();
    const attempts = delivery.attempts + 1;
    const entry: DeliveryAttempt = { at: now.toISOString(), durationMs: this.clock.nowMs() - started, statusCode, error };
    const succeeded = error === null;
    const failed = !succeeded && attempts >= this.config.outbound.maxAttempts;
    const fresh = await em.fork().findOne(WebhookDelivery, { id: delivery.id }, { fields: ['log'] } as never);
    await em.fork().nativeUpdate(WebhookDelivery, { id: delivery.id }, {
      status: succeeded ? 'succeeded' : failed ? 'failed' : 'pending',
      attempts,
      nextAttemptAt: succeeded || failed ? null : new Date(now.getTime() + this.backoff(attempts)),
      lockedUntil: null,
      lastStatusCode: statusCode,
      log: [...((fresh?.log as DeliveryAttempt[] | undefined) ?? []), entry],
      updatedAt: now,
    });
    if (!succeeded) this.log.info({ deliveryId: delivery.id, attempts, statusCode, error }, 'webhook delivery attempt failed');
  }

  /** Delay after the `attempts`-th failed attempt: base × 2^(attempts-1), capped, plus up to 20 % jitter. */
  backoff(attempts: number): number {
    const { backoffBaseMs, backoffMaxMs } = this.config.outbound;
    const delay = Math.min(backoffBaseMs * 2 ** Math.min(attempts - 1, 30), backoffMaxMs);
    return Math.round(delay * (1 + Math.random() * 0.2));
  }
}

/** Why an attempt got no answer, in the server's own words (never the receiver's). */
function describeFailure(error: unknown): string {
  if (refusalOf(error)) return 'destination_refused';
  // The stored secret could not be opened (a missing encryption key): nothing was sent.
  if (error instanceof TrellisError) return error.code;
  const name = (error as { name?: string }).name;
  if (name === 'TimeoutError' || name === 'AbortError') return 'timeout';
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return code ? `connection_failed (${code})` : 'connection_failed';
}
