import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Principal } from '../../../kernel/auth/principal.js';
import { generateOpaqueToken, safeEqual } from '../../../kernel/crypto.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import { clockServiceIdentifier, type Clock } from '../../../ports/clock.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { Block, deploymentNotFound, BlockService } from '../../blocks/index.js';
import { User } from '../../identity/index.js';
import { type SecretBox, secretBoxServiceIdentifier } from '../../ai/index.js';
import type { RunResult, StartedRun } from '../../runs/index.js';
import { WebhookReceipt, WebhookTrigger, type WebhookAnswer, type WebhookMapping, type WebhookVerification } from '../entities/webhook-trigger.entity.js';
import { triggerErrors } from '../errors.js';
import { triggersConfigServiceIdentifier } from '../tokens.js';
import type { TriggersConfig } from '../triggers.config.js';
import { DeploymentRuns } from './deployment-runs.js';
import { isForm, MAPPING_SOURCE, mapInputs, parseBody, type WebhookRequestParts } from './input-mapping.js';
import { newWebhookSecret, verifyWebhook } from './signature.js';

export interface WebhookTriggerInput {
  name?: string;
  verification?: WebhookVerification;
  mapping?: WebhookMapping;
  answer?: WebhookAnswer;
  waitSeconds?: number;
  version?: string | null;
  enabled?: boolean;
  rotateSecret?: boolean;
}

/** An inbound request as the route hands it over. */
export interface InboundRequest {
  headers: Readonly<Record<string, string>>;
  query: Record<string, string | string[]>;
  rawBody: Uint8Array;
}

/** What an accepted delivery answers: the run started (or the one a repeated delivery started), and its result when waited for. */
export interface InboundOutcome {
  runId: string;
  documentId: string;
  duplicate: boolean;
  result: RunResult | null;
}

/** How long a repeated delivery waits for the first one to record its run. */
const PENDING_WAIT_MS = 5_000;

/** Inbound webhooks of deployments: their CRUD, and `receive`, which verifies a delivery and starts its run once. */
@injectable()
export class WebhookTriggerService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(clockServiceIdentifier) private readonly clock: Clock,
    @inject(BlockService) private readonly blocks: BlockService,
    @inject(DeploymentRuns) private readonly runs: DeploymentRuns,
    @inject(secretBoxServiceIdentifier) private readonly box: SecretBox,
    @inject(triggersConfigServiceIdentifier) private readonly config: TriggersConfig,
  ) {}

  async list(em: EntityManager, principal: Principal, blockId: string, page: Paging): Promise<{ items: WebhookTrigger[]; total: number }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    const [items, total] = await em.findAndCount(WebhookTrigger, { block: block.id }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async get(em: EntityManager, principal: Principal, blockId: string, triggerId: string): Promise<WebhookTrigger> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    const trigger = await em.findOne(WebhookTrigger, { id: triggerId, block: block.id });
    if (!trigger) throw triggerErrors.webhookNotFound();
    return trigger;
  }

  /** A new trigger of a deployed block (the write permission); its secret is answered this once. */
  async create(em: EntityManager, principal: Principal, blockId: string, input: WebhookTriggerInput): Promise<{ trigger: WebhookTrigger; secret: string }> {
    const { block } = await this.blocks.requireBlock(em, principal, blockId, { wanted: 'write' });
    if (!block.latestVersion) throw deploymentNotFound();
    checkMapping(input.mapping);
    const verification = input.verification ?? 'standard';
    const secret = secretFor(verification);
    const now = this.clock.now();
    const trigger = em.create(WebhookTrigger, {
      id: this.ids.next(),
      block: em.getReference(Block, block.id),
      createdBy: em.getReference(User, principal.userId),
      name: input.name ?? 'Webhook',
      verification,
      secret: this.box.seal(secret),
      mapping: input.mapping ?? {},
      answer: input.answer ?? 'accepted',
      waitSeconds: Math.min(input.waitSeconds ?? this.config.webhooks.maxWaitSeconds, this.config.webhooks.maxWaitSeconds),
      version: input.version ?? null,
      enabled: input.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    });
    await em.flush();
    return { trigger, secret };
  }

  /** Changes a trigger; with `rotateSecret` (or a change of verification) a new secret is answered. */
  async update(em: EntityManager, principal: Principal, blockId: string, triggerId: string, input: WebhookTriggerInput): Promise<{ trigger: WebhookTrigger; secret: string | null }> {
    const trigger = await this.get(em, principal, blockId, triggerId);
    checkMapping(input.mapping);
    let secret: string | null = null;
    if (input.rotateSecret || (input.verification !== undefined && input.verification !== trigger.verification)) {
      secret = secretFor(input.verification ?? trigger.verification);
      trigger.secret = this.box.seal(secret);
    }
    if (input.verification !== undefined) trigger.verification = input.verification;
    if (input.name !== undefined) trigger.name = input.name;
    if (input.mapping !== undefined) trigger.mapping = input.mapping;
    if (input.answer !== undefined) trigger.answer = input.answer;
    if (input.waitSeconds !== undefined) trigger.waitSeconds = Math.min(input.waitSeconds, this.config.webhooks.maxWaitSeconds);
    if (input.version !== undefined) trigger.version = input.version;
    if (input.enabled !== undefined) trigger.enabled = input.enabled;
    trigger.updatedAt = this.clock.now();
    await em.flush();
    return { trigger, secret };
  }

  async remove(em: EntityManager, principal: Principal, blockId: string, triggerId: string): Promise<void> {
    const trigger = await this.get(em, principal, blockId, triggerId);
    await em.nativeDelete(WebhookReceipt, { trigger: trigger.id });
    await em.nativeDelete(WebhookTrigger, { id: trigger.id });
  }

  /**
   * An inbound delivery: verified (Standard Webhooks signature with the tolerance window, or the
   * bearer secret), its inputs mapped, and its run started, once per `webhook-id`: a repeat gets
   * the run the first one started. In `wait` mode, the result when the run ends (or waits for an
   * answer) within the trigger's `waitSeconds`.
   */
  async receive(em: EntityManager, triggerId: string, request: InboundRequest, signal?: AbortSignal): Promise<InboundOutcome> {
    const trigger = await em.findOne(WebhookTrigger, { id: triggerId, enabled: true });
    if (!trigger) throw triggerErrors.webhookNotFound();
    const secret = this.box.open(trigger.secret) as string;
    this.verify(trigger, secret, request);
    const body = parseBody(request.rawBody, request.headers['content-type']);
    const form = isForm(request.headers['content-type']) ? (body as Record<string, string | string[]>) : null;
    const parts: WebhookRequestParts = { body, form, query: request.query, headers: request.headers };
    const inputs = mapInputs(trigger.mapping, parts);
    const messageId = request.headers['webhook-id']?.trim() || null;
    const blockId = trigger.block.id;

    let receiptId: string | null = null;
    if (messageId) {
      const earlier = await this.claim(em, trigger.id, messageId);
      if (typeof earlier === 'string') receiptId = earlier;
      else {
        const started = await this.runs.attach(em, blockId, earlier.runId);
        if (!started) throw triggerErrors.webhookNotFound();
        return this.answer(trigger, started, true, signal);
      }
    }
    let started: StartedRun;
    try {
      started = await this.runs.start(em, blockId, { source: 'webhook', inputs, version: trigger.version });
    } catch (error) {
      // The run did not start: the delivery may be retried with the same webhook-id.
      if (receiptId) await em.fork().nativeDelete(WebhookReceipt, { id: receiptId });
      throw error;
    }
    if (receiptId) await em.fork().nativeUpdate(WebhookReceipt, { id: receiptId }, { runId: started.runId });
    return this.answer(trigger, started, false, signal);
  }

  private verify(trigger: WebhookTrigger, secret: string, request: InboundRequest): void {
    if (trigger.verification === 'bearer') {
      const header = request.headers['authorization'] ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match || !safeEqual(match[1]!, secret)) throw triggerErrors.bearerInvalid();
      return;
    }
    const tolerance = this.config.webhooks.toleranceSeconds;
    const outcome = verifyWebhook(secret, request.headers, request.rawBody, this.clock.nowMs(), tolerance);
    if (outcome === 'missing') throw triggerErrors.signatureMissing();
    if (outcome === 'timestamp') throw triggerErrors.timestampOutOfRange(tolerance);
    if (outcome === 'signature') throw triggerErrors.signatureInvalid();
  }

  /**
   * Records `messageId` for the trigger: its new receipt's id, or the run an earlier delivery
   * started. A receipt older than `receiptHours` is let go (the delivery counts as new); one whose
   * run is still being started is waited for a little, then answered 409.
   */
  private async claim(em: EntityManager, triggerId: string, messageId: string): Promise<string | { runId: string }> {
    const deadline = this.clock.nowMs() + PENDING_WAIT_MS;
    for (;;) {
      const id = this.ids.next();
      try {
        await em.fork().insert(WebhookReceipt, { id, trigger: triggerId, messageId, runId: null, createdAt: this.clock.now() } as never);
        return id;
      } catch (error) {
        if (!(error instanceof UniqueConstraintViolationException)) throw error;
      }
      const earlier = await em.fork().findOne(WebhookReceipt, { trigger: triggerId, messageId });
      if (!earlier) continue;
      if (earlier.createdAt.getTime() < this.clock.nowMs() - this.config.webhooks.receiptHours * 3_600_000) {
        await em.fork().nativeDelete(WebhookReceipt, { id: earlier.id });
        continue;
      }
      if (earlier.runId) return { runId: earlier.runId };
      if (this.clock.nowMs() > deadline) throw triggerErrors.duplicatePending();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async answer(trigger: WebhookTrigger, started: StartedRun, duplicate: boolean, signal?: AbortSignal): Promise<InboundOutcome> {
    const base = { runId: started.runId, documentId: trigger.block.id, duplicate };
    if (trigger.answer !== 'wait') return { ...base, result: null };
    const waitMs = Math.min(trigger.waitSeconds, this.config.webhooks.maxWaitSeconds) * 1000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), waitMs);
      signal?.addEventListener('abort', () => resolve(null), { once: true });
    });
    try {
      return { ...base, result: await Promise.race([started.result(), timeout]) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lets go of receipts older than `receiptHours`. */
  async pruneReceipts(em: EntityManager): Promise<number> {
    return em.nativeDelete(WebhookReceipt, { createdAt: { $lt: new Date(this.clock.nowMs() - this.config.webhooks.receiptHours * 3_600_000) } });
  }
}

const secretFor = (verification: WebhookVerification) => (verification === 'standard' ? newWebhookSecret() : generateOpaqueToken('trw_'));

/** At most 100 inputs, each from a source `MAPPING_SOURCE` accepts (422 `invalid_webhook_mapping`). */
function checkMapping(mapping: WebhookMapping | undefined): void {
  if (!mapping) return;
  const entries = Object.entries(mapping);
  if (entries.length > 100) throw triggerErrors.invalidMapping('', 'at most 100 inputs');
  for (const [input, source] of entries) {
    if (input.length < 1 || input.length > 200) throw triggerErrors.invalidMapping(input, 'input names are 1 to 200 characters');
    if (typeof source !== 'string' || !MAPPING_SOURCE.test(source)) throw triggerErrors.invalidMapping(input, 'must be body, body.<path>, form.<field>, query.<name> or header.<name>');
  }
}
